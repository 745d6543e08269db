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
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::extensions::registry::project_dir;
use crate::extensions::{Discovery, Registry};
use crate::kernel::events::DEFAULT_QUEUE;
use crate::kernel::session::{DEFAULT_MAX_ITERATIONS, DEFAULT_TOOL_PARALLELISM};
use crate::kernel::turn::usage_json;
use crate::kernel::{
    AllowPattern, Authority, Bus, Interactions, KernelServices, Mode, Session, SessionConfig,
    TurnOutcome, TurnStatus,
};
use crate::manifest::Kind;
use crate::paths::StudHome;
use crate::runtime::bindings::stud::extension::types as wit;
use crate::runtime::{Extension, Runtime, RuntimeOptions};

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
    #[arg(long)]
    pub model: Option<String>,
    /// Most provider requests in one turn.
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// Most tool calls running at once.
    #[arg(long)]
    pub tool_parallelism: Option<usize>,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(session(args))
}

async fn session(args: RunArgs) -> anyhow::Result<ExitCode> {
    let headless = args.print;
    let input = first_input(&args, headless)?;
    if headless && input.as_deref().is_none_or(|s| s.trim().is_empty()) {
        return Ok(ExitCode::SUCCESS);
    }
    let home = StudHome::resolve()?;
    let settings = Settings::load(&home.settings_file())?;
    let mode = if args.yolo {
        Mode::Yolo
    } else {
        match (args.mode, &settings.security_mode) {
            (Some(m), _) => m,
            (None, Some(s)) => s
                .mode
                .parse()
                .map_err(anyhow::Error::msg)
                .context("settings.json: securityMode.mode")?,
            (None, None) => Mode::Ask,
        }
    };
    let mut allow_texts = settings
        .security_mode
        .as_ref()
        .map(|s| s.allowlist.clone())
        .unwrap_or_default();
    allow_texts.extend(args.allow.iter().cloned());
    let allowlist = allow_texts
        .iter()
        .map(|t| AllowPattern::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;

    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let machine_output = args.output_format != OutputFormat::Text;
    let bus = Bus::new();
    let services = Arc::new(KernelServices::new(bus.clone(), machine_output));
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir: Some(home.compile_cache_dir()),
        pooling: true,
    })?;
    let discovery = Discovery::scan(&home, Some(&cwd));
    for p in &discovery.problems {
        eprintln!("warning: {p}");
    }
    let registry = Registry {
        runtime,
        home: home.clone(),
        project_dir: project_dir(&cwd),
        services: services.clone(),
        configs: settings.extension_configs(),
    };
    let report = registry.load_all(&discovery).await;
    for (_, e) in &report.failed {
        eprintln!("warning: {e}; continuing without it");
    }
    let exts = report.loaded;

    let stdout_sub = (args.output_format == OutputFormat::StreamJson).then(|| spawn_stdout(&bus));
    let uis: Vec<Arc<Extension>> = exts
        .iter()
        .filter(|e| e.kind() == Kind::Ui)
        .cloned()
        .collect();
    let mut subscribers: Vec<JoinHandle<()>> = Vec::new();
    if !headless && args.output_format == OutputFormat::Text {
        for ui in &uis {
            subscribers.push(spawn_ui(&bus, ui.clone()));
        }
    }
    let loggers: Vec<Arc<Extension>> = exts
        .iter()
        .filter(|e| e.kind() == Kind::Logger)
        .cloned()
        .collect();
    for logger in &loggers {
        subscribers.push(spawn_logger(&bus, logger.clone()));
    }

    let interactors = if headless { Vec::new() } else { uis.clone() };
    let interactions = Arc::new(Interactions::new(
        interactors,
        headless,
        args.yolo,
        crate::kernel::interaction::DEFAULT_TIMEOUT,
        bus.clone(),
    ));
    services.set_interactions(interactions.clone());
    let authority = Authority::new(mode, allowlist, bus.clone());
    let config = SessionConfig {
        provider: args
            .provider
            .clone()
            .or(settings.active.provider.clone())
            .unwrap_or_else(|| "scripted".into()),
        model: args.model.clone().or(settings.active.model.clone()),
        max_iterations: args
            .max_iterations
            .or(settings.runtime.continuation.max_iterations)
            .unwrap_or(DEFAULT_MAX_ITERATIONS)
            .max(1),
        tool_parallelism: args
            .tool_parallelism
            .or(settings.runtime.tool_parallelism)
            .unwrap_or(DEFAULT_TOOL_PARALLELISM)
            .max(1),
        system_prompt: settings.system_prompt.clone(),
        hook_order: settings.ordering.hooks.clone(),
    };
    let (mut session, warnings) =
        Session::start(&exts, config, authority, interactions, bus.clone()).await?;
    for w in warnings {
        eprintln!("warning: {w}");
    }

    let current = Arc::new(Mutex::new(CancellationToken::new()));
    spawn_ctrl_c(current.clone());
    let mut last: Option<TurnOutcome> = None;
    let mut next_input = input;
    loop {
        let text = match next_input.take() {
            Some(t) => t,
            None if !headless => match read_from_ui(&uis).await {
                Some(t) => t,
                None => break,
            },
            None => break,
        };
        if text.trim().is_empty() {
            continue;
        }
        let token = CancellationToken::new();
        *current.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
        let outcome = session.run_turn(&text, &token).await;
        let one_shot = headless || args.prompt.is_some();
        last = Some(outcome);
        if one_shot {
            break;
        }
    }
    session.close().await;
    bus.close();
    for s in subscribers {
        let _ = s.await;
    }
    for logger in &loggers {
        let _ = logger.logger_flush().await;
    }
    if let Some(s) = stdout_sub {
        let _ = s.await;
    }
    Ok(finish(&args, headless, &session, last))
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
    if !std::io::stdin().is_terminal() {
        bail!("no prompt: pass one (`stud run \"...\"`), or use -p to read it from stdin");
    }
    Ok(None)
}

async fn read_from_ui(uis: &[Arc<Extension>]) -> Option<String> {
    let ui = uis.first()?;
    match ui.ui_read_input().await {
        Ok(line) => line,
        Err(e) => {
            eprintln!("error: the UI could not read input: {e}");
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
                println!("{}", outcome.text);
            }
            if let Some(e) = &error {
                eprintln!("error: {e}");
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

/// First Ctrl-C cancels the running turn; a second one exits.
fn spawn_ctrl_c(current: Arc<Mutex<CancellationToken>>) {
    tokio::spawn(async move {
        let mut presses = 0;
        while tokio::signal::ctrl_c().await.is_ok() {
            presses += 1;
            if presses >= 2 {
                eprintln!("\ninterrupted");
                std::process::exit(130);
            }
            current.lock().unwrap_or_else(|p| p.into_inner()).cancel();
        }
    });
}

fn spawn_stdout(bus: &Bus) -> JoinHandle<()> {
    let sub = bus.subscribe("stdout", DEFAULT_QUEUE * 64);
    tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", ev.to_json());
        }
    })
}

fn wit_event(ev: &crate::kernel::Event) -> wit::Event {
    wit::Event {
        name: ev.name.clone(),
        sequence: ev.seq,
        timestamp_ms: ev.timestamp_ms,
        turn_id: ev.turn_id.clone(),
        payload: ev.payload.to_string(),
    }
}

fn spawn_ui(bus: &Bus, ui: Arc<Extension>) -> JoinHandle<()> {
    let sub = bus.subscribe(ui.id().as_str(), DEFAULT_QUEUE);
    let diag = bus.clone();
    tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            if let Err(e) = ui.ui_on_event(&wit_event(&ev)).await {
                diag.publish(
                    "suppressed-error",
                    json!({"extension": ui.id().as_str(), "error": e.to_string()}),
                );
            }
        }
    })
}

fn spawn_logger(bus: &Bus, logger: Arc<Extension>) -> JoinHandle<()> {
    let sub = bus.subscribe(logger.id().as_str(), DEFAULT_QUEUE);
    let diag = bus.clone();
    tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            if let Err(e) = logger.logger_sink(&wit_event(&ev)).await {
                diag.publish(
                    "suppressed-error",
                    json!({"extension": logger.id().as_str(), "error": e.to_string()}),
                );
            }
        }
    })
}

#[allow(dead_code)]
fn _value(_: Value) {}
