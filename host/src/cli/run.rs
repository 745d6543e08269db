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

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::console::Console;
use super::screen::{Screen, notify};
use super::signals::EndSignals;
use crate::kernel::events::DEFAULT_QUEUE;
use crate::kernel::extension_set::SetChoice;
use crate::kernel::front_door;
use crate::kernel::launch::ProviderPick;
use crate::kernel::persist::ResumeTarget;
use crate::kernel::screen_ui::Control;
use crate::kernel::usage::usage_json;
use crate::kernel::{
    Bus, LaunchOptions, Launched, Mode, Session, TerminalOut, TurnOutcome, TurnStatus, launch,
};
use crate::paths::StudHome;
use crate::tty::ScreenSlot;
use stud_protocol::events::Level;
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
    /// Start in plan mode: read-only tools only, the model answers with a
    /// plan (`/plan` leaves it and asks whether to carry the plan out).
    #[arg(long)]
    pub plan: bool,
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
    // One worker per core, as `Runtime::new` makes, counted once for the
    // whole process (`cores`).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::runtime::cores::cores())
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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
        replay: None,
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
    if args.plan {
        launched.session.set_plan_mode(true);
    }
    if let Some(controls) = launched.controls.take() {
        let out = screen_session(launched, controls, &options).await;
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
    let current = Arc::new(Mutex::new(CancellationToken::new()));
    spawn_ctrl_c(current.clone());
    let mut console = Console {
        first: input,
        headless,
        one_shot: headless || args.prompt.is_some(),
        options: &options,
        current,
        stdout_sub: stream_json.then(|| spawn_stdout(&launched.bus)),
        stream_json,
        last: None,
        command_failed: false,
    };
    let mut launched = front_door::serve(launched, &mut console).await?;
    launched.shutdown().await;
    console.wait_stdout().await;
    if let Some(code) = console.failed_without_turn() {
        return Ok(code);
    }
    let code = finish(&args, headless, &launched.session, console.last.take());
    // What is dropped here stops the session's MCP servers; the process
    // ends right after.
    launched.leave_extensions_to_exit();
    tracing::debug_span!("exit").in_scope(|| drop(launched));
    Ok(code)
}

/// A session in a full-screen UI: messages go to the UI as events, never
/// to stdout.
async fn screen_session(
    launched: Launched,
    controls: mpsc::UnboundedReceiver<Control>,
    options: &dyn Fn(Option<ResumeTarget>) -> LaunchOptions,
) -> anyhow::Result<ExitCode> {
    for w in &launched.warnings {
        notify(&launched.bus, Level::Warn, w.clone());
    }
    if let Some(b) = banner_text(&launched) {
        notify(&launched.bus, Level::Info, b);
    }
    let mut screen = Screen {
        controls,
        signals: EndSignals::listen(),
        ended_by: None,
        options,
        carried: None,
    };
    let mut launched = front_door::serve(launched, &mut screen).await?;
    launched.shutdown().await;
    Ok(match screen.ended_by {
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

pub(super) fn spawn_stdout(bus: &Bus) -> JoinHandle<()> {
    let sub = bus.subscribe_replaying("stdout", DEFAULT_QUEUE * 64);
    tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", ev.to_json());
        }
    })
}
