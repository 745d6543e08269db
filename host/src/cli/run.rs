//! `stud run`: a session with the discovered extensions. With a prompt,
//! one turn then exit; without one on a terminal, a read-eval loop of turns
//! through the UI; `-p` is headless (prompt from the argument or stdin, no
//! interactor: a needed approval halts the turn).
//!
//! Exit codes: 0 ok, 1 failure, 2 usage, 3 headless run halted on a needed
//! approval (re-run with --yolo or --allow), 130 cancelled (Ctrl-C).

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::signals::EndSignals;
use crate::kernel::commands::{After, Dispatched, Input, Status, classify};
use crate::kernel::events::DEFAULT_QUEUE;
use crate::kernel::extension_set::SetChoice;
use crate::kernel::launch::ProviderPick;
use crate::kernel::persist::ResumeTarget;
use crate::kernel::screen_ui::Control;
use crate::kernel::usage::usage_json;
use crate::kernel::{
    Bus, LaunchOptions, Launched, Mode, Session, TerminalOut, TurnOutcome, TurnStatus, launch,
};
use crate::paths::StudHome;
use crate::runtime::bindings::stud::extension::command_types::CommandArgs;
use crate::tty::ScreenSlot;
use std::collections::VecDeque;
use stud_protocol::events::KernelEvent;
use tokio::sync::mpsc;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The UI renders as it goes (headless: the final answer only).
    Text,
    /// One JSON object with the result at the end.
    Json,
    /// Every event as one JSON line, then the result object.
    StreamJson,
}

#[derive(Args)]
pub struct RunArgs {
    /// The prompt. Without one: a read-eval loop on a terminal, or stdin with -p.
    pub prompt: Option<String>,
    /// Headless: no interactor; reads the prompt from stdin if none is given.
    #[arg(short = 'p', long = "print", alias = "headless")]
    pub print: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,
    /// Security mode for the whole session: ask, allowlist or yolo.
    #[arg(long)]
    pub mode: Option<Mode>,
    /// Approve every tool call (and, headless, answer every question).
    #[arg(long)]
    pub yolo: bool,
    /// Allowlist entry `tool` or `tool:pattern` (repeatable; allowlist mode).
    #[arg(long = "allow")]
    pub allow: Vec<String>,
    /// Provider extension id.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id offered by the provider (the provider's first model if unset).
    #[arg(long)]
    pub model: Option<String>,
    /// Most provider requests in one turn.
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// Most tool calls running at once.
    #[arg(long)]
    pub tool_parallelism: Option<usize>,
    /// Offer no tools to the model (for models without tool calling).
    #[arg(long)]
    pub no_tools: bool,
    /// Continue the latest session of this folder.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_latest: bool,
    /// Continue the session with this id (`stud session list`).
    #[arg(long)]
    pub resume: Option<String>,
    /// Stop the session cleanly once it has cost this much (USD; needs
    /// `pricing` for the model in settings).
    #[arg(long)]
    pub max_cost: Option<f64>,
    /// Attach this state machine (a workflow such as plan-build-review):
    /// each prompt runs its stages.
    #[arg(long = "sm")]
    pub state_machine: Option<String>,
    /// Use the extension set named in the global settings (`profiles.NAME`).
    #[arg(long)]
    pub profile: Option<String>,
    /// Offer only these tool extensions (ids, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub tools: Option<Vec<String>>,
    /// Leave these extensions out of this run (ids; repeat or comma-separate).
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub disable: Vec<String>,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let result = rt.block_on(session(args));
    // The session is closed: its log and manifest are confirmed by the
    // store, loggers flushed, MCP servers and tool processes stopped. What
    // is left is idle threads (or a UI that lost an interaction race and
    // still waits on a terminal read): the process exits without joining
    // them, which takes milliseconds the person waits for.
    tracing::debug_span!("runtime_shutdown").in_scope(|| rt.shutdown_background());
    result
}

async fn session(args: RunArgs) -> anyhow::Result<ExitCode> {
    let headless = args.print;
    let input = first_input(&args, headless)?;
    if headless && input.as_deref().is_none_or(|s| s.trim().is_empty()) {
        return Ok(ExitCode::SUCCESS);
    }
    let text_output = args.output_format == OutputFormat::Text;
    let home = StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let project = super::trust::decide(&home, &cwd, headless)?;
    // An interactive session on a terminal may use a full-screen UI.
    let screen_slot: Option<ScreenSlot> = (!headless
        && text_output
        && args.prompt.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var("STUD_UI").as_deref() != Ok("line"))
    .then(ScreenSlot::default);
    let options = |resume: Option<ResumeTarget>| LaunchOptions {
        screen: screen_slot.clone(),
        questions: None,
        editor_files: None,
        editor_mcp: Vec::new(),
        settle_mcp: false,
        home: home.clone(),
        cwd: cwd.clone(),
        project: project.clone(),
        watch: true,
        max_cost_usd: args.max_cost,
        state_machine: args.state_machine.clone(),
        resume,
        headless,
        yolo: args.yolo,
        mode: args.mode,
        allow: args.allow.clone(),
        provider: args.provider.clone(),
        model: args.model.clone(),
        max_iterations: args.max_iterations,
        tool_parallelism: args.tool_parallelism,
        no_tools: args.no_tools,
        set: SetChoice {
            profile: args.profile.clone(),
            tools: args.tools.clone(),
            disable: args.disable.clone(),
        },
        render: !headless && text_output,
        terminal: if text_output {
            TerminalOut::Stdout
        } else {
            TerminalOut::Stderr
        },
    };
    let mut launched = launch(options(match (&args.resume, args.continue_latest) {
        (Some(id), _) => Some(ResumeTarget::Id(id.clone())),
        (None, true) => Some(ResumeTarget::Latest),
        (None, false) => None,
    }))
    .await?;
    if let Some(controls) = launched.controls.take() {
        let out = screen_session(launched, controls, &options, &current_token()).await;
        if let Some(s) = screen_slot.and_then(|slot| slot.lock().ok()?.take()) {
            s.release();
        }
        return out;
    }
    for w in &launched.warnings {
        errln!("warning: {w}");
    }
    if !headless {
        banner(&launched);
    }
    let stream_json = args.output_format == OutputFormat::StreamJson;
    let mut stdout_sub = stream_json.then(|| spawn_stdout(&launched.bus));

    let current = Arc::new(Mutex::new(CancellationToken::new()));
    spawn_ctrl_c(current.clone());
    let one_shot = headless || args.prompt.is_some();
    let mut last: Option<TurnOutcome> = None;
    let mut command_failed = false;
    let mut next_input = input;
    loop {
        let text = match next_input.take() {
            Some(t) => t,
            None if !headless => match read_from_ui(&launched).await {
                Some(t) => t,
                None => break,
            },
            None => break,
        };
        if text.trim().is_empty() {
            continue;
        }
        // Between inputs is a stage boundary: MCP servers that came up
        // meanwhile join (their tools, their prompts).
        launched.session.refresh_mcp_tools().await;
        let prompt = match launched.session.mcp_input(classify(&text)).await {
            Input::Prompt(p) => p,
            Input::Invalid(message) => {
                errln!("error: {message}");
                command_failed = true;
                if one_shot {
                    break;
                }
                continue;
            }
            Input::Command { name, args: cargs } => {
                let done = launched
                    .commands
                    .dispatch(&name, cargs, &mut launched.session, false)
                    .await;
                command_failed = done.status != Status::Ok;
                show_command(&done);
                let resume = match done.after {
                    After::Continue if one_shot => break,
                    After::Continue => continue,
                    After::Exit => break,
                    After::NewSession => None,
                    After::Resume(id) => Some(ResumeTarget::Id(id)),
                };
                // The old session ends (saved) and the next one starts in
                // this process, with the same flags.
                launched.shutdown().await;
                if let Some(s) = stdout_sub.take() {
                    let _ = s.await;
                }
                launched = launch(options(resume)).await?;
                for w in &launched.warnings {
                    errln!("warning: {w}");
                }
                stdout_sub = stream_json.then(|| spawn_stdout(&launched.bus));
                errln!("session {}", launched.session.id);
                if one_shot {
                    break;
                }
                continue;
            }
        };
        let token = CancellationToken::new();
        *current.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
        // With a state machine attached, the input runs its workflow.
        last = Some(launched.session.run_workflow(&prompt, &token).await);
        if one_shot {
            break;
        }
        if launched.session.budget_spent() {
            // The turn's end already said why; a new turn would only be
            // refused again.
            break;
        }
    }
    launched.shutdown().await;
    if let Some(s) = stdout_sub {
        let _ = s.await;
    }
    if last.is_none() && command_failed {
        return Ok(ExitCode::FAILURE);
    }
    let code = finish(&args, headless, &launched.session, last);
    // What is dropped here stops the session's MCP servers; the process
    // ends right after.
    launched.leave_extensions_to_exit();
    tracing::debug_span!("exit").in_scope(|| drop(launched));
    Ok(code)
}

fn current_token() -> Arc<Mutex<CancellationToken>> {
    Arc::new(Mutex::new(CancellationToken::new()))
}

/// A session in a full-screen UI: input arrives as [`Control`]s, also
/// while a turn runs (a follow-up is queued, steering goes to the turn,
/// Esc interrupts it). Messages go to the UI as events, never to stdout.
async fn screen_session(
    mut launched: Launched,
    mut controls: mpsc::UnboundedReceiver<Control>,
    options: &dyn Fn(Option<ResumeTarget>) -> LaunchOptions,
    current: &Arc<Mutex<CancellationToken>>,
) -> anyhow::Result<ExitCode> {
    let notify = |bus: &Bus, level: &str, message: String| {
        bus.publish(KernelEvent::Diagnostic {
            level: level.into(),
            message,
        })
    };
    for w in &launched.warnings {
        notify(&launched.bus, "warn", w.clone());
    }
    if let Some(b) = banner_text(&launched) {
        notify(&launched.bus, "info", b);
    }
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut signals = EndSignals::listen();
    // The signal that ended the session, for the exit status (128 + n).
    let mut ended_by: Option<i32> = None;
    loop {
        let text = match pending.pop_front() {
            Some(t) => t,
            None => tokio::select! {
                c = controls.recv() => match c {
                    Some(Control::Submit(t) | Control::Steer(t)) => t,
                    Some(Control::Interrupt) => continue,
                    Some(Control::Quit) | None => break,
                },
                n = signals.recv() => {
                    ended_by = Some(n);
                    break;
                }
            },
        };
        if text.trim().is_empty() {
            continue;
        }
        // Between inputs is a stage boundary: MCP servers that came up
        // meanwhile join (their tools, their prompts).
        launched.session.refresh_mcp_tools().await;
        let prompt = match launched.session.mcp_input(classify(&text)).await {
            Input::Prompt(p) => p,
            Input::Invalid(message) => {
                notify(&launched.bus, "error", message);
                continue;
            }
            Input::Command { name, args } => {
                let done = launched
                    .commands
                    .dispatch(&name, args, &mut launched.session, false)
                    .await;
                let resume = match done.after {
                    After::Continue => continue,
                    After::Exit => break,
                    After::NewSession => None,
                    After::Resume(id) => Some(ResumeTarget::Id(id)),
                };
                launched.shutdown().await;
                launched = launch(options(resume)).await?;
                match launched.controls.take() {
                    Some(c) => controls = c,
                    None => bail!("the new session has no full-screen UI"),
                }
                for w in &launched.warnings {
                    notify(&launched.bus, "warn", w.clone());
                }
                continue;
            }
        };
        let token = CancellationToken::new();
        *current.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
        let steering = launched.session.steering.clone();
        let mut quit = false;
        {
            // Turn-safe commands typed meanwhile run now, one at a time,
            // beside the turn, on a snapshot of the session.
            let view = launched.commands.turn_view(&launched.session);
            let mut commands = Some(&mut launched.commands);
            let mut waiting: VecDeque<(String, CommandArgs)> = VecDeque::new();
            let mut running = None;
            let turn = launched.session.run_workflow(&prompt, &token);
            tokio::pin!(turn);
            loop {
                if running.is_none()
                    && let Some(c) = commands.take()
                {
                    match waiting.pop_front() {
                        Some((name, args)) => {
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
                    _ = &mut turn => break,
                    n = signals.recv(), if ended_by.is_none() => {
                        token.cancel();
                        ended_by = Some(n);
                    }
                    (done, c) = async { running.as_mut().expect("guarded").await }, if running.is_some() => {
                        running = None;
                        commands = Some(c);
                        if done.after == After::Exit {
                            token.cancel();
                            quit = true;
                        }
                    }
                    c = controls.recv() => match c {
                        Some(Control::Interrupt) => token.cancel(),
                        Some(Control::Steer(t)) => steering.push(t),
                        Some(Control::Submit(t)) => match classify(&t) {
                            Input::Command { name, args } => waiting.push_back((name, args)),
                            // A prompt (or an invalid line, reported then)
                            // runs once the turn ended.
                            _ => pending.push_back(t),
                        },
                        Some(Control::Quit) | None => {
                            token.cancel();
                            quit = true;
                        }
                    },
                }
            }
        }
        if quit || ended_by.is_some() || launched.session.budget_spent() {
            break;
        }
    }
    launched.shutdown().await;
    Ok(match ended_by {
        Some(n) => ExitCode::from(128 + n as u8),
        None => ExitCode::SUCCESS,
    })
}

/// What the session runs on, and for a first run how to change it.
fn banner(launched: &Launched) {
    if let Some(text) = banner_text(launched) {
        errln!("{text}");
    }
}

fn banner_text(launched: &Launched) -> Option<String> {
    let s = &launched.session;
    let mut lines = Vec::new();
    match &launched.provider_pick {
        ProviderPick::Chosen => {}
        ProviderPick::FromKey { var } => lines.push(format!(
            "stud: using {} ({}) because {var} is set; choose another with --provider or \"active\" in settings",
            s.provider_id(),
            s.model()
        )),
        ProviderPick::OfflineDemo => lines.push(
            "stud: no provider is configured and no API key is set, so this session runs on the offline demo provider `scripted` (it plays a script; it is not a model).\nTo use a real model:\n  export ANTHROPIC_API_KEY=...   # or OPENAI_API_KEY, GEMINI_API_KEY\n  stud".to_string(),
        ),
    }
    if let Some(set) = &s.extension_set {
        lines.push(format!("stud: extension set: {}", set.describe()));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// A command's answer: what it rendered on stdout, a failure or refusal
/// as an error on stderr.
fn show_command(done: &Dispatched) {
    let text = done.text.trim_end();
    match done.status {
        Status::Ok if text.is_empty() => {}
        Status::Ok => outln!("{text}"),
        Status::Failed | Status::Refused => errln!("error: {text}"),
    }
}

/// The prompt for the first turn: the argument, or all of stdin when
/// headless without one.
fn first_input(args: &RunArgs, headless: bool) -> anyhow::Result<Option<String>> {
    if let Some(p) = &args.prompt {
        return Ok(Some(p.clone()));
    }
    if headless {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the prompt from stdin")?;
        return Ok(Some(text));
    }
    // Piped input without -p: the line console reads it, one prompt per
    // line (a full-screen UI needs a terminal on both ends).
    Ok(None)
}

/// The next prompt from the interactor (the one UI that reads the
/// person's input), once the UIs have shown the last answer.
async fn read_from_ui(launched: &Launched) -> Option<String> {
    launched.settle_ui().await;
    let ui = launched.session.interactor()?;
    match ui.ui_read_input().await {
        Ok(line) => line,
        Err(e) => {
            errln!("error: the UI could not read input: {e}");
            None
        }
    }
}

fn finish(
    args: &RunArgs,
    headless: bool,
    session: &Session,
    last: Option<TurnOutcome>,
) -> ExitCode {
    let Some(outcome) = last else {
        return ExitCode::SUCCESS;
    };
    let code = match &outcome.status {
        TurnStatus::Completed => 0,
        TurnStatus::Failed { .. } => 1,
        TurnStatus::Halted { .. } => 3,
        TurnStatus::Cancelled => 130,
    };
    if let TurnStatus::Halted { tool, key } = &outcome.status {
        let hint = format!(
            "re-run with --yolo, or with --mode allowlist --allow '{tool}:{key}', or interactively"
        );
        // JSON for programs: exact (it escapes control characters itself).
        eprintln!(
            "{}",
            json!({"type": "permission-required", "request": "approve", "tool": tool, "key": key, "hint": hint})
        );
    }
    let (error_code, error) = match &outcome.status {
        TurnStatus::Failed { code, message } => (Some(code.clone()), Some(message.clone())),
        _ => (None, None),
    };
    match args.output_format {
        OutputFormat::Text => {
            if headless && outcome.status == TurnStatus::Completed {
                // Piped, the answer is data for another program: exact.
                // On a terminal, a person reads it: made safe.
                if std::io::stdout().is_terminal() {
                    outln!("{}", outcome.text);
                } else {
                    println!("{}", outcome.text);
                }
            }
            if let Some(e) = &error {
                errln!("error: {e}");
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            let result = json!({
                "type": "result",
                "status": outcome.status.as_str(),
                "result": outcome.text,
                "error_code": error_code,
                "error": error,
                "session_id": session.id,
                "turn_id": outcome.turn_id,
                "provider": session.provider_id(),
                "model": session.model(),
                "iterations": outcome.iterations,
                "usage": usage_json(&outcome.usage),
            });
            println!("{result}");
        }
    }
    let _ = std::io::stdout().flush();
    ExitCode::from(code)
}

/// First Ctrl-C cancels the running turn; a second one before the next
/// turn starts exits. Each turn has a fresh token, so the count starts
/// over with every turn.
fn spawn_ctrl_c(current: Arc<Mutex<CancellationToken>>) {
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            let token = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if token.is_cancelled() {
                errln!("\ninterrupted");
                std::process::exit(130);
            }
            token.cancel();
        }
    });
}

fn spawn_stdout(bus: &Bus) -> JoinHandle<()> {
    let sub = bus.subscribe_replaying("stdout", DEFAULT_QUEUE * 64);
    tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", ev.to_json());
        }
    })
}
