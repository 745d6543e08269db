//! The one front door. The line console, the full-screen UI and an editor
//! over ACP hand the kernel typed [`Submission`]s and show typed
//! [`Answer`]s; what a line means (a prompt, a `/command`, an MCP server's
//! `/mcp__server__prompt`, a prompt naming `@server:uri`), what runs beside
//! a turn and when a turn stops is decided here, once, so the front ends
//! cannot drift apart.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::commands::{After, Dispatched};
use super::input::{Input, classify};
use super::launch::{LaunchError, Launched};
use super::mcp_hub::McpHub;
use super::persist::ResumeTarget;
use super::plan_mode::{CARRY_OUT, PLAN_COMMAND};
use super::rewind::{REWIND, UNDO};
use super::terminal_signals::COPY;

/// The commands the door answers itself: they act on the session, so
/// while a turn runs they wait for its end.
const KERNEL_COMMANDS: [&str; 4] = [COPY, PLAN_COMMAND, UNDO, REWIND];
use super::turn_context::ToolLimit;
use super::turn_status::TurnOutcome;
use crate::runtime::domain::CommandArgs;
use crate::runtime::domain::Image;

/// What a person (or an editor) hands the session.
#[derive(Debug)]
pub enum Submission {
    /// A typed or sent line with what it carries. Between turns it runs
    /// now; while a turn runs a command runs beside it (turn-safe ones
    /// only) and a prompt is the follow-up, run once the turn ended (so is
    /// a command that makes a prompt: an MCP server's, a Markdown one).
    Line { text: String, images: Vec<Image> },
    /// Words for the running turn's next stage boundary; between turns, a
    /// line.
    Steer(String),
    /// Stop the running turn; between turns, nothing.
    Interrupt,
    /// End the session, stopping a running turn first.
    Quit,
}

impl Submission {
    /// A line without attachments.
    pub fn line(text: impl Into<String>) -> Self {
        Submission::Line {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// What a submission came to.
#[derive(Debug)]
pub enum Answer {
    /// A prompt ran as a turn (a workflow's turns, with a state machine).
    Turn(TurnOutcome),
    /// A command ran (or was refused: `done.status` says which).
    Command { name: String, done: Dispatched },
    /// The person's `!command` ran (its output goes with the next prompt)
    /// or did not.
    Shell {
        command: String,
        run: super::shell_input::ShellRun,
    },
    /// A command the kernel answers itself (`/copy`, `/plan`): what it
    /// did, or why it did not.
    Said(Result<String, String>),
    /// Neither could run; nothing was sent to the model.
    Refused(Refusal),
}

/// Why a line did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It starts like a command but is none (a bad MCP prompt, a missing
    /// argument); the message names what to change.
    InvalidCommand(String),
    /// It carries images the session's model cannot see.
    ImagesUnsupported(String),
    /// It mentions a file (`@path`) that could not be read: refused by a
    /// guard or the person, or missing.
    Mention(String),
}

impl Refusal {
    pub fn message(&self) -> &str {
        match self {
            Refusal::InvalidCommand(m) | Refusal::ImagesUnsupported(m) | Refusal::Mention(m) => m,
        }
    }
}

/// Whether the front end wants more after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// A command asked for another session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionSwitch {
    /// A new, empty session.
    New,
    /// The saved session with this id.
    Resume(String),
}

impl SessionSwitch {
    pub fn target(&self) -> Option<ResumeTarget> {
        match self {
            SessionSwitch::New => None,
            SessionSwitch::Resume(id) => Some(ResumeTarget::Id(id.clone())),
        }
    }
}

/// What a front end does: where submissions come from and how answers
/// are shown. Everything else is the door's.
pub trait FrontEnd {
    /// Whether a command may end the session or switch to another. An
    /// editor opens and closes its sessions itself: there such a command
    /// shows its answer and the session goes on.
    const ENDS_SESSIONS: bool = true;

    /// Whether the person's terminal is this front end's (an editor's
    /// channel is not: `/copy` has no clipboard to write there).
    const OWNS_TERMINAL: bool = true;

    /// The next submission between turns; `None` when there is no more.
    fn next(&mut self, launched: &Launched) -> impl Future<Output = Option<Submission>>;

    /// A submission while a turn runs. A front end that cannot take input
    /// then (a line console reads from the UI that asks the approvals)
    /// never answers; `None` means its input closed (a quit).
    fn during_turn(&mut self) -> impl Future<Output = Option<Submission>> {
        std::future::pending()
    }

    /// A turn starts; `token` stops it (a front end's own stop path:
    /// Ctrl-C, an editor's cancel notification).
    fn turn_started(&mut self, _token: &CancellationToken) {}

    /// Show an answer; `Flow::Stop` ends the door after it.
    fn answered(&mut self, launched: &Launched, answer: Answer) -> impl Future<Output = Flow>;

    /// A command asked for another session. The front end ends this one
    /// and starts the next (or keeps this one where it cannot switch:
    /// an editor opens sessions itself). The old session is gone either
    /// way: an error ends the door.
    fn switch(
        &mut self,
        launched: Launched,
        to: SessionSwitch,
    ) -> impl Future<Output = Result<Launched, LaunchError>>;
}

/// Serve `front` until it has no more or quits; the session is handed
/// back, not shut down (each front end says goodbye its own way). A
/// session switch that fails to start the next session ends it with the
/// error.
pub async fn serve<F: FrontEnd>(
    mut launched: Launched,
    front: &mut F,
) -> Result<Launched, LaunchError> {
    // Prompts sent while a turn ran: they run next, in order.
    let mut follow_ups: VecDeque<Submission> = VecDeque::new();
    loop {
        let submission = match follow_ups.pop_front() {
            Some(s) => s,
            None => match front.next(&launched).await {
                Some(s) => s,
                None => return Ok(launched),
            },
        };
        let (text, images) = match submission {
            Submission::Line { text, images } => (text, images),
            Submission::Steer(text) => (text, Vec::new()),
            Submission::Interrupt => continue,
            Submission::Quit => return Ok(launched),
        };
        if text.trim().is_empty() {
            continue;
        }
        match prepare(&mut launched, &text, images).await {
            Prepared::Refused(why) => {
                if front.answered(&launched, Answer::Refused(why)).await == Flow::Stop {
                    return Ok(launched);
                }
            }
            Prepared::Command { name, args } => {
                let done = launched
                    .commands
                    .dispatch(&name, args, &mut launched.session, false)
                    .await;
                let after = done.after.clone();
                let flow = front
                    .answered(&launched, Answer::Command { name, done })
                    .await;
                let after = if F::ENDS_SESSIONS {
                    after
                } else {
                    After::Continue
                };
                let to = match after {
                    After::Continue if flow == Flow::Stop => {
                        return Ok(launched);
                    }
                    After::Continue => continue,
                    After::Exit => return Ok(launched),
                    After::NewSession => SessionSwitch::New,
                    After::Resume(id) => SessionSwitch::Resume(id),
                };
                launched = front.switch(launched, to).await?;
                if flow == Flow::Stop {
                    return Ok(launched);
                }
            }
            Prepared::Copy => {
                let copied = copy_last_answer(&launched, F::OWNS_TERMINAL);
                if front.answered(&launched, Answer::Said(copied)).await == Flow::Stop {
                    return Ok(launched);
                }
            }
            Prepared::Undo => {
                let said = super::rewind::undo(&mut launched.session).await;
                if front.answered(&launched, Answer::Said(said)).await == Flow::Stop {
                    return Ok(launched);
                }
            }
            Prepared::Rewind(arg) => {
                let said = super::rewind::rewind(&mut launched.session, &arg).await;
                if front.answered(&launched, Answer::Said(said)).await == Flow::Stop {
                    return Ok(launched);
                }
            }
            Prepared::Plan => {
                let (said, carry_out) = toggle_plan(&mut launched).await;
                if front.answered(&launched, Answer::Said(said)).await == Flow::Stop {
                    return Ok(launched);
                }
                if carry_out {
                    let (outcome, quit) =
                        run_turn(&mut launched, front, CARRY_OUT, &mut follow_ups).await;
                    let flow = front.answered(&launched, Answer::Turn(outcome)).await;
                    if quit || flow == Flow::Stop {
                        return Ok(launched);
                    }
                }
            }
            Prepared::Shell(command) => {
                let token = CancellationToken::new();
                front.turn_started(&token);
                let run = launched.session.run_shell(&command, &token).await;
                if front
                    .answered(&launched, Answer::Shell { command, run })
                    .await
                    == Flow::Stop
                {
                    return Ok(launched);
                }
            }
            Prepared::Prompt { prompt, model } => {
                let restore = model.and_then(|m| m.pick(&mut launched));
                let (outcome, quit) =
                    run_turn(&mut launched, front, &prompt, &mut follow_ups).await;
                if let Some(before) = restore {
                    let _ = launched.session.set_model(&before);
                }
                let flow = front.answered(&launched, Answer::Turn(outcome)).await;
                if quit || flow == Flow::Stop {
                    return Ok(launched);
                }
            }
        }
    }
}

/// A line made ready: MCP servers that came up since the last line joined
/// (their tools, their prompts), the line classified, a server's prompt
/// expanded and named resources attached, images checked against the
/// model.
enum Prepared {
    Prompt {
        prompt: String,
        /// A Markdown command's `model` for this turn.
        model: Option<TurnModel>,
    },
    Command {
        name: String,
        args: CommandArgs,
    },
    Shell(String),
    Copy,
    Plan,
    Undo,
    Rewind(String),
    Refused(Refusal),
}

/// The last answer's text to the terminal's clipboard (OSC 52).
fn copy_last_answer(launched: &Launched, owns_terminal: bool) -> Result<String, String> {
    if !owns_terminal {
        return Err(
            "/copy writes a terminal's clipboard; in an editor, copy from its own view".into(),
        );
    }
    let answer = last_answer(launched).ok_or("there is no answer to copy yet")?;
    let sequence = super::terminal_signals::clipboard(&answer)?;
    launched.services.signal(&sequence);
    Ok(format!(
        "copied the last answer ({} bytes) to the clipboard",
        answer.len()
    ))
}

/// `/plan`: on, or off with the question whether to carry out the plan
/// (in the session's own mode). Returns what to say and whether the
/// person said yes.
async fn toggle_plan(launched: &mut Launched) -> (Result<String, String>, bool) {
    if !launched.session.plan_mode() {
        launched.session.set_plan_mode(true);
        return (
            Ok("plan mode on: the model can use read-only tools only and answers with a plan; /plan (Shift-Tab) leaves it".into()),
            false,
        );
    }
    launched.session.set_plan_mode(false);
    let Some(plan) = last_answer(launched) else {
        return (Ok("plan mode off".into()), false);
    };
    let mode = launched.session.mode().as_str();
    let question = super::plan_mode::carry_out_question(&plan, mode);
    let answer = launched
        .session
        .interactions
        .request(crate::runtime::domain::InteractionKind::Confirm(question))
        .await;
    let yes = matches!(
        answer,
        super::interaction::Answer::Response(r)
            if r.status == crate::runtime::domain::InteractionStatus::Accepted
    );
    let said = if yes {
        format!("plan mode off: carrying out the plan in the {mode} mode")
    } else {
        "plan mode off; the plan was not carried out (ask for it when you are ready)".into()
    };
    (Ok(said), yes)
}

/// The text of the last answer that has any.
fn last_answer(launched: &Launched) -> Option<String> {
    launched
        .session
        .history()
        .iter()
        .rev()
        .find(|m| {
            m.role == crate::runtime::domain::Role::Assistant && !text_of(m).trim().is_empty()
        })
        .map(text_of)
}

fn text_of(m: &crate::runtime::domain::Message) -> String {
    m.content
        .iter()
        .filter_map(|p| match p {
            crate::runtime::domain::ContentPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

async fn prepare(launched: &mut Launched, text: &str, images: Vec<Image>) -> Prepared {
    // Between inputs is a stage boundary.
    launched.session.refresh_mcp_tools().await;
    match launched.session.mcp_input(classify(text)).await {
        Input::Invalid(why) => Prepared::Refused(Refusal::InvalidCommand(why)),
        Input::Shell(command) => Prepared::Shell(command),
        Input::Command { name, .. } if name == COPY => Prepared::Copy,
        Input::Command { name, .. } if name == PLAN_COMMAND => Prepared::Plan,
        Input::Command { name, .. } if name == UNDO => Prepared::Undo,
        Input::Command { name, args } if name == REWIND => Prepared::Rewind(args.raw),
        Input::Command { name, args } => {
            match launched.commands.markdown().expand(&name, &args.raw) {
                Some(e) => {
                    let limit = e.allowed_tools.map(|t| ToolLimit {
                        allowed: t.into_iter().collect(),
                        by: format!("the allowed-tools of {name}"),
                    });
                    let model = e.model.map(|model| TurnModel {
                        command: name,
                        model,
                    });
                    prompt_ready(launched, e.prompt, images, limit, model).await
                }
                None => Prepared::Command { name, args },
            }
        }
        Input::Prompt(prompt) => prompt_ready(launched, prompt, images, None, None).await,
    }
}

/// A prompt with its mentions read, the person's shell output and images
/// added, and the turn narrowed as its command asks (set last, once
/// nothing can refuse it any more).
async fn prompt_ready(
    launched: &mut Launched,
    prompt: String,
    images: Vec<Image>,
    tools: Option<ToolLimit>,
    model: Option<TurnModel>,
) -> Prepared {
    let (prompt, mentioned) = match super::mentions::attach_files(&launched.session, prompt).await {
        Ok((p, mentioned)) => (launched.session.with_shell_notes(p), mentioned),
        Err(why) => return Prepared::Refused(Refusal::Mention(why)),
    };
    let mut images = images;
    images.extend(mentioned);
    match launched.session.attach_images(images) {
        Ok(()) => {
            let plan = launched.session.plan_mode();
            let tools = match plan {
                true => Some(super::plan_mode::limit(
                    &launched.session.offered_tools(),
                    tools,
                )),
                false => tools,
            };
            launched.session.turn.tools = tools;
            launched.session.turn.plan = plan;
            Prepared::Prompt { prompt, model }
        }
        Err(why) => Prepared::Refused(Refusal::ImagesUnsupported(why)),
    }
}

/// The model a Markdown command names for its turn.
struct TurnModel {
    command: String,
    model: String,
}

impl TurnModel {
    /// Switch to it for the turn; the model to go back to after. A model
    /// the provider does not have (a Claude model named in a command
    /// file, another provider in use) leaves the session's and says so.
    fn pick(self, launched: &mut Launched) -> Option<String> {
        let before = launched.session.model().to_string();
        if before == self.model {
            return None;
        }
        match launched.session.set_model(&self.model) {
            Ok(()) => Some(before),
            Err(e) => {
                launched
                    .bus
                    .publish(stud_protocol::events::KernelEvent::Diagnostic {
                        level: stud_protocol::events::Level::Warn,
                        message: format!(
                            "{} asks for model `{}`: {e}; the turn uses `{before}`",
                            self.command, self.model
                        ),
                    });
                None
            }
        }
    }
}

/// The commands that stand for a prompt rather than an action: the MCP
/// servers' prompts and the Markdown commands. Taken before a turn, which
/// holds the session; a server that connects meanwhile is asked live.
struct PromptCommands {
    hub: Arc<McpHub>,
    markdown: HashSet<String>,
}

impl PromptCommands {
    fn of(launched: &Launched) -> Self {
        Self {
            hub: launched.session.mcp().clone(),
            markdown: launched
                .commands
                .markdown()
                .all()
                .map(|c| c.name.clone())
                .collect(),
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.markdown.contains(name) || self.hub.prompt(name).is_some()
    }
}

/// One prompt's turn (its workflow, with a state machine attached), with
/// what the front end sends meanwhile: steering reaches the turn, a
/// turn-safe command runs beside it on a snapshot of the session (one at
/// a time), a prompt waits in `follow_ups`. Returns the outcome and
/// whether the session is to end.
async fn run_turn<F: FrontEnd>(
    launched: &mut Launched,
    front: &mut F,
    prompt: &str,
    follow_ups: &mut VecDeque<Submission>,
) -> (TurnOutcome, bool) {
    let token = CancellationToken::new();
    front.turn_started(&token);
    let steering = launched.session.steering.clone();
    let view = launched.commands.turn_view(&launched.session);
    let prompt_commands = PromptCommands::of(launched);
    let mut quit = false;
    let mut commands = Some(&mut launched.commands);
    // Each with the line it came from: one the turn ends before runs after.
    let mut waiting: VecDeque<(String, CommandArgs, String)> = VecDeque::new();
    let mut running = None;
    let mut input_open = true;
    let turn = launched.session.run_workflow(prompt, &token);
    tokio::pin!(turn);
    let outcome = loop {
        if running.is_none()
            && let Some(c) = commands.take()
        {
            match waiting.pop_front() {
                Some((name, args, _)) => {
                    let view = &view;
                    running = Some(Box::pin(async move {
                        let done = c.dispatch_during_turn(&name, args, view).await;
                        (done, c)
                    }));
                }
                None => commands = Some(c),
            }
        }
        tokio::select! {
            outcome = &mut turn => break outcome,
            (done, c) = async { running.as_mut().expect("guarded").await }, if running.is_some() => {
                running = None;
                commands = Some(c);
                if F::ENDS_SESSIONS && done.after == After::Exit {
                    token.cancel();
                    quit = true;
                }
            }
            s = front.during_turn(), if input_open => match s {
                Some(Submission::Interrupt) => token.cancel(),
                Some(Submission::Steer(text)) => steering.push(text),
                Some(Submission::Line { text, images }) => match classify(&text) {
                    // The kernel's own (`/plan`, `/copy`) wait for the
                    // turn's end: they act on the session the turn holds.
                    // So do those that make a prompt: they are the next
                    // turn, not something to run beside this one.
                    Input::Command { name, .. }
                        if KERNEL_COMMANDS.contains(&name.as_str())
                            || prompt_commands.contains(&name) =>
                    {
                        follow_ups.push_back(Submission::Line { text, images })
                    }
                    Input::Command { name, args } => waiting.push_back((name, args, text)),
                    // A prompt (or an invalid line, reported then) runs
                    // once the turn ended.
                    _ => follow_ups.push_back(Submission::Line { text, images }),
                },
                Some(Submission::Quit) | None => {
                    input_open = false;
                    token.cancel();
                    quit = true;
                }
            },
        }
    };
    // A command that arrived as the turn ended is not lost: the one
    // running finishes, the ones waiting run after the turn.
    if let Some(done) = running {
        let (done, _) = done.await;
        if F::ENDS_SESSIONS && done.after == After::Exit {
            quit = true;
        }
    }
    for (_, _, text) in waiting.into_iter().rev() {
        follow_ups.push_front(Submission::line(text));
    }
    (outcome, quit)
}
