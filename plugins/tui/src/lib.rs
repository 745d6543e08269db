//! `tui`: the full-screen terminal UI. It renders the session (streamed
//! Markdown, tool calls with result summaries and diffs, notices), keeps a
//! multi-line input with history and slash-command completion, a status
//! line and a spinner, and asks approvals as dialogs. It never blocks on
//! input: the host hands it every key, so typing during a turn queues a
//! follow-up (Enter), steers the turn (Ctrl-S) or stops it (Esc).
//!
//! It draws only cells through the host (`backend`), which renders them
//! and refuses control characters: model output cannot steer the terminal.

mod backend;
mod dialog;
mod history_search;
mod markdown;
mod mention_completion;
mod transcript;
mod view;

use ratatui::Terminal;
use ratatui::style::Color;
use stud_sdk::events::{CommandInfo, CommandStatus, Decision, KernelEvent, Level, TurnResult};
use stud_sdk::host::terminal::{Key, KeyCode, KeyModifiers, ScreenSize, TermEvent};
use stud_sdk::prelude::*;
use stud_sdk::wit::stud::extension::interaction::{InteractionRequest, InteractionResponse};
use stud_sdk::{Screen, UiAction};
use tui_textarea::TextArea;

use backend::HostBackend;
use history_search::Search;
use transcript::{Entry, ToolState};

/// Least time between two frames while text streams (coalescing).
const FRAME_MS: u64 = 33;

#[derive(Default)]
struct Status {
    session_id: String,
    provider: String,
    model: String,
    mode: String,
    input_tokens: u64,
    cost_usd: Option<f64>,
    context_window: Option<u64>,
}

struct Running {
    started_ms: u64,
    /// Characters streamed so far. Deltas are not tokens (and the host
    /// merges bursts of them), so tokens are estimated from the text.
    chars: u64,
}

impl Running {
    /// About four characters per token, as most tokenizers average on
    /// English and code.
    fn tokens(&self) -> u64 {
        self.chars.div_ceil(4)
    }
}

#[derive(Default)]
struct Tui {
    term: Option<Terminal<HostBackend>>,
    entries: Vec<Entry>,
    input: TextArea<'static>,
    history: Vec<String>,
    history_at: Option<usize>,
    status: Status,
    running: Option<Running>,
    queued: Vec<String>,
    commands: Vec<CommandInfo>,
    /// Lines scrolled up from the bottom of the transcript.
    scroll: u16,
    dirty: bool,
    last_frame_ms: u64,
    /// The last entry is an answer still streaming.
    streaming: bool,
    /// Ctrl-C presses since the running turn was asked to stop.
    interrupts: u8,
    /// A question is open (the turn waits for the person).
    asking: bool,
    /// The time of the frame being drawn (ms).
    now_ms: u64,
    /// Paths an `@` completion left to choose from, listed under the input.
    path_choices: Vec<String>,
    /// An open Ctrl-R search.
    search: Option<Search>,
    /// Esc was pressed between turns: another opens `/rewind`.
    esc_armed: bool,
    /// The session store refused a write and has not confirmed one since
    /// (said once, not at every record).
    store_failing: bool,
}

impl Tui {
    fn notice(&mut self, text: impl Into<String>, color: Color) {
        self.streaming = false;
        self.entries.push(Entry::Notice(text.into(), color));
        self.dirty = true;
    }

    fn input_text(&self) -> String {
        self.input.lines().join("\n")
    }

    fn set_input(&mut self, text: &str) {
        self.input = TextArea::from(text.split('\n').map(str::to_string).collect::<Vec<_>>());
        self.input.move_cursor(tui_textarea::CursorMove::Bottom);
        self.input.move_cursor(tui_textarea::CursorMove::End);
    }

    /// Draw now, or soon if a frame was drawn very recently.
    fn render(&mut self, force: bool) {
        let now = host::now_ms();
        if !force && now.saturating_sub(self.last_frame_ms) < FRAME_MS {
            self.dirty = true;
            return;
        }
        self.dirty = false;
        self.last_frame_ms = now;
        self.now_ms = now;
        view::draw(self, now, None);
    }

    fn completions(&self) -> Vec<&CommandInfo> {
        let text = self.input_text();
        if !text.starts_with('/') || text.contains(char::is_whitespace) {
            return Vec::new();
        }
        self.commands
            .iter()
            .filter(|c| c.name.starts_with(&text))
            .take(6)
            .collect()
    }

    fn complete(&mut self) {
        let names: Vec<String> = self.completions().iter().map(|c| c.name.clone()).collect();
        let Some(first) = names.first() else { return };
        let common = names.iter().fold(first.clone(), |acc, n| {
            acc.chars()
                .zip(n.chars())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect()
        });
        let text = if names.len() == 1 {
            format!("{common} ")
        } else {
            common
        };
        self.set_input(&text);
    }

    /// A key while a Ctrl-R search is open; `false` when it ends the
    /// search and is to be handled as usual.
    fn search_key(&mut self, k: &Key) -> bool {
        let Some(mut search) = self.search.take() else {
            return false;
        };
        let ctrl = k.modifiers.contains(KeyModifiers::CTRL);
        match k.code {
            KeyCode::Char('r') if ctrl => {
                let shown = search.at;
                if search
                    .find(&self.history, shown.unwrap_or(usize::MAX))
                    .is_none()
                {
                    search.at = shown;
                }
            }
            KeyCode::Char('c' | 'g') if ctrl => {
                self.set_input(&search.before);
                return true;
            }
            KeyCode::Esc => {
                self.set_input(&search.before);
                return true;
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.find(&self.history, usize::MAX);
            }
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.find(&self.history, usize::MAX);
            }
            // Enter takes the match into the input; anything else takes
            // it and acts as usual.
            KeyCode::Enter => return true,
            _ => return false,
        }
        let shown = search.at.map(|i| self.history[i].clone());
        self.set_input(shown.as_deref().unwrap_or(&search.before));
        self.search = Some(search);
        true
    }

    fn key(&mut self, k: Key) -> Vec<UiAction> {
        let ctrl = k.modifiers.contains(KeyModifiers::CTRL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        if self.search_key(&k) {
            return Vec::new();
        }
        if !matches!(k.code, KeyCode::Tab) {
            self.path_choices.clear();
        }
        if !matches!(k.code, KeyCode::Esc) {
            self.esc_armed = false;
        }
        match k.code {
            KeyCode::Char('c') if ctrl => {
                if self.running.is_some() {
                    self.interrupts += 1;
                    if self.interrupts > 1 {
                        return vec![UiAction::Quit];
                    }
                    self.notice("interrupting… (Ctrl-C again to quit)", Color::Yellow);
                    return vec![UiAction::Interrupt];
                }
                if !self.input_text().is_empty() {
                    self.set_input("");
                    return Vec::new();
                }
                return vec![UiAction::Quit];
            }
            KeyCode::Char('d') if ctrl && self.input_text().is_empty() => {
                return vec![UiAction::Quit];
            }
            KeyCode::Esc => {
                if self.running.is_some() {
                    self.notice("interrupted", Color::Yellow);
                    return vec![UiAction::Interrupt];
                }
                // Esc Esc between turns: the kernel's `/rewind`.
                if std::mem::take(&mut self.esc_armed) {
                    return vec![UiAction::Submit("/rewind".into())];
                }
                self.esc_armed = true;
                self.dirty = true;
                return Vec::new();
            }
            KeyCode::Enter if alt => self.input.insert_newline(),
            KeyCode::Char('j') if ctrl => self.input.insert_newline(),
            // Redraw everything: the screen is cleared and painted anew.
            KeyCode::Char('l') if ctrl => {
                if let Some(t) = self.term.as_mut() {
                    let _ = t.clear();
                }
            }
            KeyCode::Enter => {
                let text = self.input_text();
                if text.trim().is_empty() {
                    return Vec::new();
                }
                if self.history.last() != Some(&text) {
                    self.history.push(text.clone());
                }
                self.history_at = None;
                self.set_input("");
                self.scroll = 0;
                // A command runs at once (or is refused); a prompt waits.
                let command = text.starts_with('/') && !text.starts_with("//");
                if self.running.is_some() && !command {
                    self.queued.push(text.clone());
                }
                return vec![UiAction::Submit(text)];
            }
            KeyCode::Char('s') if ctrl => {
                let text = self.input_text();
                if self.running.is_some() && !text.trim().is_empty() {
                    self.set_input("");
                    self.notice(format!("↳ steering: {text}"), Color::Magenta);
                    return vec![UiAction::Steer(text)];
                }
            }
            // Plan mode on or off (the kernel's `/plan`; after the turn
            // when one runs).
            KeyCode::BackTab => return vec![UiAction::Submit("/plan".into())],
            KeyCode::Tab => match mention_completion::complete(&mut self.input) {
                Some(choices) => self.path_choices = choices,
                None => self.complete(),
            },
            KeyCode::Char('r') if ctrl => {
                let mut search = Search::new(self.input_text());
                search.find(&self.history, usize::MAX);
                self.search = Some(search);
            }
            // The input in the person's editor; the screen was theirs
            // meanwhile, so everything is drawn anew.
            KeyCode::Char('g') if ctrl => {
                match host::terminal::edit_text(&self.input_text()) {
                    Ok(text) => self.set_input(&text),
                    Err(why) => self.notice(format!("editor: {why}"), Color::Red),
                }
                if let Some(t) = self.term.as_mut() {
                    let _ = t.clear();
                }
            }
            KeyCode::PageUp => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Up if self.input.lines().len() <= 1 && !self.history.is_empty() => {
                let at = match self.history_at {
                    None => self.history.len() - 1,
                    Some(i) => i.saturating_sub(1),
                };
                self.history_at = Some(at);
                let text = self.history[at].clone();
                self.set_input(&text);
            }
            KeyCode::Down if self.input.lines().len() <= 1 && self.history_at.is_some() => {
                match self.history_at {
                    Some(i) if i + 1 < self.history.len() => {
                        self.history_at = Some(i + 1);
                        let text = self.history[i + 1].clone();
                        self.set_input(&text);
                    }
                    _ => {
                        self.history_at = None;
                        self.set_input("");
                    }
                }
            }
            _ => {
                if let Some(input) = textarea_input(&k) {
                    self.input.input(input);
                }
            }
        }
        Vec::new()
    }
}

/// `@path ` for a paste that is one image file's path (as a terminal
/// gives a file dropped on it: maybe quoted, maybe a `file://` URL).
fn pasted_image(text: &str) -> Option<String> {
    let t = text.trim();
    let t = t.strip_prefix("file://").unwrap_or(t);
    let t = t.trim_matches(|c| c == '\'' || c == '"');
    let lower = t.to_ascii_lowercase();
    let image = [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|e| lower.ends_with(e));
    (image && !t.is_empty() && !t.contains(char::is_whitespace)).then(|| format!("@{t} "))
}

fn textarea_input(k: &Key) -> Option<tui_textarea::Input> {
    use tui_textarea::Key as T;
    let key = match k.code {
        KeyCode::Char(c) => T::Char(c),
        KeyCode::Backspace => T::Backspace,
        KeyCode::Delete => T::Delete,
        KeyCode::Left => T::Left,
        KeyCode::Right => T::Right,
        KeyCode::Up => T::Up,
        KeyCode::Down => T::Down,
        KeyCode::Home => T::Home,
        KeyCode::End => T::End,
        KeyCode::Tab => T::Tab,
        KeyCode::Enter => T::Enter,
        _ => return None,
    };
    Some(tui_textarea::Input {
        key,
        ctrl: k.modifiers.contains(KeyModifiers::CTRL),
        alt: k.modifiers.contains(KeyModifiers::ALT),
        shift: k.modifiers.contains(KeyModifiers::SHIFT),
    })
}

impl Ui for Tui {
    fn on_event(&mut self, event: Event) {
        // A subagent's own events: its work shows as the `task` call's
        // entry and result, not as turns of this conversation.
        if KernelEvent::agent_path(&event.payload).is_some() {
            return;
        }
        let Some(Ok(event)) = KernelEvent::from_wire_text(&event.name, &event.payload) else {
            return;
        };
        match event {
            KernelEvent::SessionStart {
                session_id,
                provider,
                model,
                mode,
                context_window,
                ..
            } => {
                // Another session in this UI (a switch) starts clean; the
                // first keeps what was shown before it started (a notice
                // for a key pressed in the first moment).
                if !self.status.session_id.is_empty() {
                    self.entries.clear();
                }
                self.status = Status {
                    session_id,
                    provider,
                    model,
                    mode,
                    context_window,
                    ..Status::default()
                };
                self.dirty = true;
            }
            KernelEvent::CommandsAvailable { commands } => self.commands = commands,
            KernelEvent::TurnStart { input, .. } => {
                if let Some(at) = self.queued.iter().position(|q| *q == input) {
                    self.queued.remove(at);
                }
                self.entries.push(Entry::User(input));
                self.interrupts = 0;
                self.running = Some(Running {
                    started_ms: host::now_ms(),
                    chars: 0,
                });
                self.streaming = false;
                self.dirty = true;
            }
            KernelEvent::ProviderTokens { delta } => {
                if let Some(r) = self.running.as_mut() {
                    r.chars += delta.chars().count() as u64;
                }
                match self.entries.last_mut() {
                    Some(Entry::Assistant(t)) if self.streaming => t.push_str(&delta),
                    _ => {
                        self.entries.push(Entry::Assistant(delta));
                        self.streaming = true;
                    }
                }
                self.render(false);
                return;
            }
            // The message as recorded (never dropped, unlike the tokens
            // the bus may drop for a UI that falls behind): the answer on
            // screen becomes exactly what the model said.
            KernelEvent::MessageAppended {
                role,
                content,
                execution_id: None,
            } if role == "assistant" => {
                let text: String = content
                    .iter()
                    .filter(|p| p["type"] == "text")
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                self.streaming = false;
                if !text.is_empty() {
                    let answer = self
                        .entries
                        .iter_mut()
                        .rev()
                        .take_while(|e| !matches!(e, Entry::User(_)))
                        .find_map(|e| match e {
                            Entry::Assistant(t) => Some(t),
                            _ => None,
                        });
                    match answer {
                        Some(t) => *t = text,
                        None => self.entries.push(Entry::Assistant(text)),
                    }
                }
            }
            KernelEvent::ToolProposed {
                call_id,
                tool,
                arguments,
            } => {
                self.streaming = false;
                self.entries.push(Entry::tool(&call_id, &tool, &arguments));
            }
            KernelEvent::InteractionRequested { kind, .. } => {
                // An approval names the tool, not the call: the oldest
                // call of that tool still being decided is the one asked.
                if let Some(tool) = kind.get("approve").and_then(Value::as_str) {
                    let asked = self.entries.iter_mut().find_map(|e| match e {
                        Entry::Tool { name, state, .. }
                            if name == tool && *state == ToolState::Proposed =>
                        {
                            Some(state)
                        }
                        _ => None,
                    });
                    if let Some(state) = asked {
                        *state = ToolState::AwaitingApproval;
                    }
                }
            }
            KernelEvent::ToolStarted { call_id, .. } => set_state(
                &mut self.entries,
                &call_id,
                ToolState::Running {
                    since_ms: host::now_ms(),
                },
            ),
            KernelEvent::ToolSucceeded {
                call_id, output, ..
            } => set_state(
                &mut self.entries,
                &call_id,
                ToolState::Done(transcript::summary(&output)),
            ),
            KernelEvent::ToolFailed {
                call_id,
                code,
                message,
                ..
            } => set_state(
                &mut self.entries,
                &call_id,
                ToolState::Failed(format!("{code}: {message}")),
            ),
            KernelEvent::ToolCancelled {
                call_id, reason, ..
            } => set_state(&mut self.entries, &call_id, ToolState::Cancelled(reason)),
            KernelEvent::ApprovalDecided {
                call_id,
                decision: Decision::Deny,
                layer,
                reason,
                ..
            } => {
                set_state(
                    &mut self.entries,
                    &call_id,
                    ToolState::Denied(format!("{layer}: {reason}")),
                );
                self.notice(format!("denied by {layer}: {reason}"), Color::Red);
            }
            KernelEvent::AllowlistAdded { entries, file, .. } => self.notice(
                format!("added to the allowlist in {file}: {}", entries.join(", ")),
                Color::Green,
            ),
            KernelEvent::TurnSteered { text } => self.notice(
                format!("↳ the turn took your steering: {text}"),
                Color::Magenta,
            ),
            KernelEvent::TurnEnd {
                status,
                message,
                usage,
                session_cost_usd,
                ..
            } => {
                self.running = None;
                self.streaming = false;
                self.status.input_tokens = usage.input_tokens;
                self.status.cost_usd = Some(session_cost_usd);
                if status != TurnResult::Ok {
                    self.notice(format!("[turn {status}] {message}"), Color::Yellow);
                }
                self.dirty = true;
            }
            KernelEvent::ModelChanged { to, .. } => self.status.model = to,
            KernelEvent::ProviderChanged { to, model, .. } => {
                self.status.provider = to;
                self.status.model = model;
            }
            KernelEvent::CommandResulted {
                status, message, ..
            } => {
                let color = if status == CommandStatus::Ok {
                    Color::Reset
                } else {
                    Color::Red
                };
                self.notice(message.trim_end().to_string(), color);
            }
            KernelEvent::PersistenceFailed { error, .. } if !self.store_failing => {
                self.store_failing = true;
                self.notice(format!("[not saved] {error}"), Color::Red);
            }
            KernelEvent::MessagePersisted { .. } if self.store_failing => {
                self.store_failing = false;
                self.notice(
                    "[saved] the session store is writing again",
                    Color::DarkGray,
                );
            }
            KernelEvent::Diagnostic { level, message } => {
                let color = match level {
                    Level::Error => Color::Red,
                    Level::Warn => Color::Yellow,
                    Level::Trace | Level::Debug | Level::Info => Color::DarkGray,
                };
                self.notice(message, color);
            }
            KernelEvent::ContextWarning { percent, .. } => self.notice(
                format!("context {percent}% full; /compact shortens it"),
                Color::Yellow,
            ),
            KernelEvent::ExtensionReloaded { id, version, .. } => self.notice(
                format!("[reload] {id} {version} is in use"),
                Color::DarkGray,
            ),
            _ => return,
        }
        // Frames are merged only while a turn streams; between turns an
        // event (a new session's banner after `/clear`, a command's
        // answer) is drawn at once, not at the next tick.
        self.render(self.running.is_none());
    }

    fn on_interaction(&mut self, request: InteractionRequest) -> InteractionResponse {
        self.asking = true;
        let answer = dialog::ask(self, request);
        self.asking = false;
        answer
    }
}

/// Move the call `id` to `next`, unless it already ended.
fn set_state(entries: &mut [Entry], id: &str, next: ToolState) {
    for e in entries.iter_mut().rev() {
        if let Entry::Tool { call_id, state, .. } = e
            && call_id == id
        {
            if state.open() {
                *state = next;
            }
            return;
        }
    }
}

impl Screen for Tui {
    fn start(&mut self, size: ScreenSize) {
        let mut backend = HostBackend::default();
        backend.resized(size.cols, size.rows);
        self.term = Terminal::new(backend).ok();
        self.history = host::terminal::input_history();
        self.input
            .set_placeholder_text("Ask, or type / for commands");
        self.render(true);
    }

    fn on_input(&mut self, event: TermEvent) -> Vec<UiAction> {
        let actions = match event {
            TermEvent::Tick => {
                if self.dirty || self.running.is_some() {
                    self.render(true);
                }
                return Vec::new();
            }
            TermEvent::Resize(s) => {
                if let Some(t) = self.term.as_mut() {
                    t.backend_mut().resized(s.cols, s.rows);
                    let _ = t.autoresize();
                    let _ = t.clear();
                }
                Vec::new()
            }
            TermEvent::Paste(text) => {
                // A dropped or pasted image file becomes a mention, so it
                // is attached (through `read`) rather than sent as text.
                match pasted_image(&text) {
                    Some(mention) => self.input.insert_str(mention),
                    None => self.input.insert_str(text.replace('\r', "\n")),
                };
                Vec::new()
            }
            TermEvent::Key(k) => self.key(k),
        };
        self.render(true);
        actions
    }
}

stud_sdk::export_tui!(Tui);
