//! Assembling a session from what is installed: settings, discovery,
//! loading, subscribers (UIs, loggers), interactors, authority. The CLI and
//! the benchmarks start sessions through here.

use super::agent_catalog::{AgentCatalog, task_spec};
use super::tools::ToolRunner;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use tracing::Instrument as _;

use tokio::task::JoinHandle;

use super::authority::Reach;
use super::commands::{CommandEnv, Commands};
use super::compaction::CompactionConfig;
use super::events::{Bus, DEFAULT_QUEUE, Subscriber};
use super::extension_set::{ExtensionSet, SetChoice};
use super::first_request::FirstRequest;
use super::hooks::HookOrder;
use super::interaction::{DEFAULT_TIMEOUT, Interactions};
use super::named::{self, NamedBy, may_answer};
use super::persist::{self, Persistence, ResumeError, ResumeTarget};
use super::redact::Redactor;
use super::reload::Reloader;
use super::retry::RetryPolicy;
use super::roster::SessionError;
use super::screen_ui::{Control, Driver};
use super::services::{KernelServices, TerminalOut};
use super::session::{
    DEFAULT_MAX_ITERATIONS, DEFAULT_TOOL_OUTPUT_LIMIT, DEFAULT_TOOL_PARALLELISM, Session,
    SessionConfig,
};
use super::session_lock::{SessionLock, SessionLockError};
use super::subscribers::{spawn_logger, spawn_ui};
use super::{AllowPattern, Authority, Mode};
use crate::config::{Layered, Profile, Settings, SettingsError};
use crate::extensions::registry::project_dir;
use crate::extensions::trust::recorded_scope;
use crate::extensions::watch::{Watch, watch};
use crate::extensions::{Discovery, ProjectScope, Registry, Scope, UserGrants};
use crate::manifest::{HookKind, HookSlot, Kind, Phase, Stage};
use crate::paths::StudHome;
use crate::runtime::bindings::stud::extension::provider_types::ThinkingLevel;
use crate::runtime::{Extension, Runtime, RuntimeError, RuntimeOptions};
use crate::tty::{Screen, ScreenSlot};
use tokio::sync::mpsc;

/// The UI that answers questions unless `active.interactor` names another.
pub const DEFAULT_INTERACTOR: &str = "console";
/// The full-screen UI used on a terminal unless settings name another.
pub const SCREEN_INTERACTOR: &str = "tui";

/// What the user chose for this session (flags over settings).
pub struct LaunchOptions {
    pub home: StudHome,
    pub cwd: PathBuf,
    /// No interactor: approvals halt the turn unless `yolo`.
    pub headless: bool,
    pub yolo: bool,
    pub mode: Option<Mode>,
    pub allow: Vec<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub max_iterations: Option<u32>,
    pub tool_parallelism: Option<usize>,
    /// Offer no tools to the model.
    pub no_tools: bool,
    /// Subscribe UI extensions to the bus (they render).
    pub render: bool,
    pub terminal: TerminalOut,
    /// Whether the project's `.stud/` (settings, extensions) is read.
    pub project: ProjectScope,
    /// Watch extension folders and reload changed extensions.
    pub watch: bool,
    /// Continue an earlier session instead of starting one.
    pub resume: Option<ResumeTarget>,
    /// `--max-cost`: the session's budget in USD.
    pub max_cost_usd: Option<f64>,
    /// `--sm`: the state machine to attach (over `active.stateMachine`).
    pub state_machine: Option<String>,
    /// `--profile`, `--tools`, `--disable`: the extension set.
    pub set: SetChoice,
    /// Where a full-screen UI may take the terminal (an interactive run on
    /// a terminal); `None`: line UIs only.
    pub screen: Option<ScreenSlot>,
    /// Send every question here instead of to a UI (an editor over ACP
    /// answers them); routed before anything can ask.
    pub questions: Option<mpsc::UnboundedSender<super::interaction::Ask>>,
    /// An editor's file system: `read`, `write` and `edit` go through it.
    pub editor_files: Option<std::sync::Arc<dyn super::editor_files::EditorFiles>>,
    /// MCP servers an editor passed (`McpScope::Editor`), started under
    /// the same trust rules as configured ones.
    pub editor_mcp: Vec<crate::mcp::McpServer>,
    /// Wait for MCP servers to start before the session is handed over,
    /// as a headless run does (an editor opening a session shows it
    /// loading; its first prompt then has the servers' tools).
    pub settle_mcp: bool,
}

impl LaunchOptions {
    /// A headless session in `cwd` with nothing chosen on the command line:
    /// settings and defaults decide. Callers change what they need.
    pub fn headless(home: StudHome, cwd: PathBuf) -> Self {
        let project = recorded_scope(home.root(), &cwd);
        LaunchOptions {
            home,
            cwd,
            headless: true,
            yolo: false,
            mode: None,
            allow: Vec::new(),
            provider: None,
            model: None,
            max_iterations: None,
            tool_parallelism: None,
            no_tools: false,
            render: false,
            terminal: TerminalOut::Discard,
            project,
            watch: false,
            resume: None,
            max_cost_usd: None,
            state_machine: None,
            set: SetChoice::default(),
            screen: None,
            questions: None,
            editor_files: None,
            editor_mcp: Vec::new(),
            settle_mcp: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("settings.json: securityMode.mode: {0}")]
    Mode(String),
    #[error("{0}")]
    Allowlist(String),
    #[error("{0}")]
    Setting(String),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Resume(#[from] ResumeError),
    #[error(transparent)]
    SessionBusy(#[from] SessionLockError),
    #[error(transparent)]
    Workflow(#[from] super::workflow_def::WorkflowError),
    #[error(transparent)]
    Set(#[from] super::extension_set::SetError),
}

/// Why the session runs on the provider it runs on (the first-run banner
/// says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderPick {
    /// `--provider`, a profile or `active.provider` chose it.
    Chosen,
    /// Nothing chose one and this key variable is set.
    FromKey { var: &'static str },
    /// Nothing chose one and no key variable is set: the offline demo.
    OfflineDemo,
}

/// Providers picked by their key variable when nothing chooses one, in
/// this order.
pub const KEY_PROVIDERS: [(&str, &str); 3] = [
    ("ANTHROPIC_API_KEY", "anthropic"),
    ("OPENAI_API_KEY", "openai-compatible"),
    ("GEMINI_API_KEY", "gemini"),
];

/// A running session and what serves it.
pub struct Launched {
    pub session: Session,
    /// The slash commands this session can run.
    pub commands: Commands,
    pub bus: Bus,
    pub uis: Vec<Arc<Extension>>,
    pub loggers: Vec<Arc<Extension>>,
    /// Every extension the session loaded.
    extensions: Vec<Arc<Extension>>,
    /// Problems that did not stop the session (bad manifests, failed loads).
    pub warnings: Vec<String>,
    /// Why this provider serves the session.
    pub provider_pick: ProviderPick,
    /// What the person does through a full-screen UI; `None` in a line
    /// session (the loop reads input from the UI then).
    pub controls: Option<mpsc::UnboundedReceiver<Control>>,
    subscribers: Vec<JoinHandle<()>>,
    ui_subscriptions: Vec<Arc<Subscriber>>,
    /// Extension folders being watched for hot reload.
    watch: Option<Watch>,
    /// This process's hold on the session.
    _lock: SessionLock,
}

/// Start a session: its phases are `tracing` spans (`--debug`).
#[tracing::instrument(name = "start", skip_all)]
pub async fn launch(opts: LaunchOptions) -> Result<Launched, LaunchError> {
    let mut layered = tracing::debug_span!("settings").in_scope(|| {
        Layered::load(
            &opts.home.settings_file(),
            opts.project.settings_layer().as_ref(),
        )
    })?;
    let (grants, grant_warnings) = UserGrants::from_layers(&layered);
    let settings = std::mem::take(&mut layered.settings);
    let chosen_set = ExtensionSet::resolve(&opts.set, &settings)?;
    let profile = chosen_set.as_ref().map(|s| &s.choice);
    let (mode, allowlist) = security(&opts, &settings, profile, &layered.project_allowlist)?;
    // Whether this run chose a mode itself (a flag, or a profile that
    // names one); if not, a resumed session keeps its recorded profile's.
    let mode_asked = opts.yolo || opts.mode.is_some() || profile.is_some_and(|p| p.mode.is_some());

    let bus = Bus::new();
    let services = Arc::new(KernelServices::new(bus.clone(), opts.terminal));
    // The engine is made while discovery reads the folders: neither needs
    // the other.
    let cache = opts.home.compile_cache();
    let span = tracing::debug_span!("runtime");
    let engine = tokio::task::spawn_blocking(move || {
        span.in_scope(|| {
            Runtime::new(RuntimeOptions {
                cache: Some(cache),
                // Measured (docs/benchmarks.md): a session makes about ten
                // instances, each as fast on demand as from the pool, while
                // reserving the pool costs 3-7 ms at start and its
                // terabyte of address space about 1.5 ms at exit.
                pooling: false,
            })
        })
    });
    let discovery =
        tracing::debug_span!("discovery").in_scope(|| Discovery::scan(&opts.home, &opts.project));
    let runtime = engine
        .await
        .map_err(|e| RuntimeError::Engine(format!("making the engine panicked: {e}")))??;
    let mut warnings: Vec<String> = std::mem::take(&mut layered.warnings);
    warnings.extend(runtime.cache_problem().map(str::to_string));
    warnings.extend(discovery.problems.iter().map(|p| p.to_string()));
    warnings.extend(grant_warnings);
    bus.set_redactor(Redactor::new(
        grants.all_values(discovery.found.iter().map(|d| &d.manifest)),
    ));
    let registry = Arc::new(Registry {
        runtime,
        home: opts.home.clone(),
        project_dir: project_dir(&opts.cwd),
        services: services.clone(),
        configs: crate::extensions::grants::with_guard_grants(
            settings.extension_configs(),
            &settings.protected_paths.allow,
        ),
        fallback_configs: layered.global_configs,
        grants,
    });
    warnings.extend(
        registry.configs.misfiled(
            discovery
                .found
                .iter()
                .map(|d| (d.manifest.kind, d.manifest.id.as_str())),
        ),
    );
    // Commands are instantiated at first use, not at start.
    let eager = Discovery {
        found: discovery
            .found
            .iter()
            .filter(|d| d.manifest.kind != Kind::Command)
            .cloned()
            .collect(),
        problems: Vec::new(),
    };
    let report = registry
        .load_all(&eager)
        .instrument(tracing::debug_span!(
            "load_extensions",
            count = eager.found.len()
        ))
        .await;
    warnings.extend(report.warnings.iter().cloned());
    warnings.extend(
        report
            .failed
            .iter()
            .map(|(_, e)| format!("{e}; continuing without it")),
    );
    let all = report.loaded;
    // The store is read before the set is known: a resumed session brings
    // the set it was started with.
    let project_root = project_dir(&opts.cwd).display().to_string();
    let store = choose_store(
        &settings,
        NamedBy::setting(&layered.provenance, "/active/sessionStore"),
        all.iter()
            .filter(|e| e.kind() == Kind::SessionStore)
            .cloned()
            .collect(),
    )?;
    let resumed = match (&opts.resume, &store) {
        (None, _) => None,
        (Some(_), None) => return Err(ResumeError::NoStore.into()),
        (Some(target), Some(store)) => Some(
            persist::read(store, target, &project_root, &all)
                .instrument(tracing::debug_span!("resume"))
                .await?,
        ),
    };
    // Names on the command line must exist; a recorded set whose
    // extensions were removed since still resumes (drift never fails it).
    if let Some(s) = &chosen_set {
        s.check(&discovery.found)?;
    }
    let set = chosen_set.or_else(|| resumed.as_ref().and_then(|r| r.extension_set.clone()));
    let keeps = |m: &crate::manifest::Manifest, scope: Scope| {
        set.as_ref().is_none_or(|s| s.keeps(m, scope))
    };
    let exts: Vec<Arc<Extension>> = all
        .into_iter()
        .filter(|e| keeps(&e.manifest, e.scope))
        .collect();
    let store = store.filter(|s| keeps(&s.manifest, s.scope));
    let of = |k: Kind| {
        exts.iter()
            .filter(|e| e.kind() == k)
            .cloned()
            .collect::<Vec<_>>()
    };
    let uis = of(Kind::Ui);
    let loggers = of(Kind::Logger);

    let chosen_ui = set.as_ref().and_then(|s| s.choice.ui.as_deref());
    let interactor_id = interactor_id(&opts, &settings, chosen_ui, &uis);
    let mut subscribers = Vec::new();
    let mut ui_subscriptions = Vec::new();
    let mut controls = None;
    let mut asks = opts.questions.clone();
    let screen_ui = uis
        .iter()
        .find(|u| u.id().as_str() == interactor_id && may_answer(u) && u.ui_has_screen())
        .cloned();
    let screen = match (&opts.screen, screen_ui, opts.render) {
        (Some(slot), Some(ui), true) => match Screen::in_slot(slot) {
            Ok(screen) => Some((screen, ui)),
            Err(e) => {
                warnings.push(format!(
                    "the terminal could not be set up for the full-screen UI ({e}); using the line console"
                ));
                None
            }
        },
        _ => None,
    };
    match screen {
        Some((screen, ui)) => {
            services.set_screen(screen.clone());
            let (control_tx, control_rx) = mpsc::unbounded_channel();
            let (ask_tx, ask_rx) = mpsc::unbounded_channel();
            let sub = bus.subscribe(ui.id().as_str(), DEFAULT_QUEUE);
            ui_subscriptions.push(sub.clone());
            subscribers.push(
                Driver {
                    sub,
                    ui,
                    screen,
                    controls: control_tx,
                    asks: ask_rx,
                    bus: bus.clone(),
                }
                .spawn(),
            );
            controls = Some(control_rx);
            asks = Some(ask_tx);
        }
        None if opts.render => {
            // Line UIs only: a full-screen one has no screen to draw on.
            for ui in uis.iter().filter(|u| !u.ui_has_screen()) {
                let sub = bus.subscribe(ui.id().as_str(), DEFAULT_QUEUE);
                ui_subscriptions.push(sub.clone());
                subscribers.push(spawn_ui(sub, &bus, ui.clone()));
            }
        }
        None => {}
    }
    let interactor_id = if asks.is_none()
        && uis
            .iter()
            .any(|u| u.id().as_str() == interactor_id && may_answer(u) && u.ui_has_screen())
    {
        // The full-screen UI has no screen here: the line console answers.
        DEFAULT_INTERACTOR.to_string()
    } else {
        interactor_id
    };
    // A headless run knows its input: what its first request does not
    // need waits until that request is out (an interactive session links
    // it all while the person types).
    let first_request = if opts.headless {
        FirstRequest::closed()
    } else {
        FirstRequest::open_now()
    };
    for logger in &loggers {
        subscribers.push(spawn_logger(&bus, logger.clone(), first_request.clone()));
    }
    let interactions = interactions(&opts, &settings, &interactor_id, &uis, &bus, &mut warnings);
    if let Some(asks) = asks {
        interactions.route_through(asks);
    }
    interactions.hold_output_with(services.held.clone());
    services.set_interactions(interactions.clone());
    let (commands, command_warnings) = Commands::new(
        CommandEnv {
            home: opts.home.clone(),
            cwd: project_dir(&opts.cwd),
            project: opts.project.clone(),
            found: discovery
                .found
                .iter()
                .filter(|d| keeps(&d.manifest, d.scope))
                .cloned()
                .collect(),
            loaded: exts.clone(),
        },
        settings.commands.clone(),
        registry.clone(),
        services.commands.clone(),
        bus.clone(),
        interactions.clone(),
    );
    warnings.extend(command_warnings);
    // A resumed session never gets looser than it was started: the
    // stricter of its stored mode and what this run asks for.
    let mode = match resumed.as_ref().and_then(|r| r.mode) {
        Some(stored) => stored.stricter(resumed_mode(mode, mode_asked, &set)?),
        None => mode,
    };
    let authority =
        Authority::new(mode, allowlist, bus.clone()).with_settings_file(opts.home.settings_file());
    let (config, provider_pick) = session_config(
        &opts,
        &settings,
        profile_of(&set),
        &exts,
        &layered.global_hook_order,
    )?;
    named::check(
        &exts,
        Kind::Provider,
        &config.provider,
        provider_named_by(&opts, profile_of(&set), &settings, &layered.provenance),
        "active.provider",
    )
    .map_err(|e| LaunchError::Setting(e.to_string()))?;
    prelink(
        &exts,
        &config.provider,
        store.as_ref(),
        &uis,
        opts.render,
        &first_request,
    );
    let (mut session, tool_warnings) = Session::start(
        &exts,
        config,
        authority,
        interactions,
        bus.clone(),
        first_request.clone(),
    )
    .instrument(tracing::debug_span!("session_start"))
    .await?;
    warnings.extend(tool_warnings);
    session.editor = opts
        .editor_files
        .clone()
        .map(|files| super::editor_files::EditorRoute {
            files,
            project: project_dir(&opts.cwd),
        });
    warnings.extend(offer_agents(&mut session, &opts, &settings, set.as_ref()));
    if !opts.no_tools {
        let (hub, mcp_warnings) = super::mcp_hub::start(
            &opts.home,
            &opts.project,
            &opts.cwd,
            &bus,
            Some(&session.interactions),
            &opts.editor_mcp,
        )
        .instrument(tracing::debug_span!("mcp_start"))
        .await;
        warnings.extend(mcp_warnings);
        session.extension_set = set.clone();
        // A headless run waits for its servers (each within its start
        // timeout): a script expects their tools in its first request. An
        // interactive session goes on; tools join at the first stage
        // boundary after their server is up.
        if session.interactions.is_headless() || opts.settle_mcp {
            let (mcp, started_warnings) = hub
                .settle()
                .instrument(tracing::debug_span!("mcp_settle"))
                .await;
            warnings.extend(started_warnings);
            warnings.extend(session.add_mcp_tools(mcp));
        }
        session.mcp = Arc::new(hub);
    }
    session.extension_set = set.clone();
    let reloader = Reloader::new(
        registry,
        opts.home.clone(),
        opts.project.clone(),
        bus.clone(),
        &exts,
        discovery
            .found
            .iter()
            .map(|d| (d.manifest.id.to_string(), d.scope))
            .collect(),
    );
    // A headless run whose extensions are all bundled has nothing a watch
    // could reload (their code is in the binary, and one installed while
    // the session runs waits for the next start anyway), and a process
    // holding an inotify instance is reaped only after the kernel's grace
    // period for it: 2-10 ms here, up to 37 ms (docs/benchmarks.md). Such
    // a run does not watch; `/reload` still looks.
    let on_disk = discovery
        .found
        .iter()
        .any(|d| d.scope != crate::extensions::Scope::Bundled);
    let watch = if opts.watch && (on_disk || !opts.headless) {
        let r = reloader.clone();
        match tracing::debug_span!("watch")
            .in_scope(|| watch(&reloader.roots(), move || r.rescan(false)))
        {
            Ok(w) => Some(w),
            Err(e) => {
                warnings.push(format!(
                    "extension folders are not watched ({e}); use /reload after changing one"
                ));
                None
            }
        }
    } else {
        None
    };
    session.set_reloader(reloader);
    if let Some(store) = store {
        session.set_persistence(Persistence {
            store,
            created_ms: persist::now_ms(),
            project_root,
            loaded: exts.clone(),
            title: String::new(),
            wrote: Default::default(),
            manifests: Default::default(),
            last_manifest: Default::default(),
        });
    }
    if let Some(r) = &resumed {
        session.id = r.session_id.clone();
    }
    // Before anything is written to the session's log.
    let lock = SessionLock::acquire(opts.home.root(), &session.id)?;
    session.announce();
    commands.announce();
    let recorded = resumed.as_ref().map(|r| r.state_machine.clone());
    if let Some(r) = resumed {
        session.adopt(r).await;
    }
    let wanted = opts
        .state_machine
        .clone()
        .or(profile_of(&set).and_then(|p| p.state_machine.clone()))
        .or(settings.active.state_machine.clone());
    // Settings or a profile naming the machine a resumed session ran add
    // nothing to its record, which decides (and is checked against what
    // is loaded); only `--sm` takes what is loaded now knowingly.
    let wanted = match (&wanted, &recorded) {
        (Some(w), Some(Some(r))) if opts.state_machine.is_none() && *w == r.id => None,
        _ => wanted,
    };
    // A state machine's stage envelopes approve tools: one your settings
    // or profile name must be yours, not a project's under the same id.
    if let Some(id) = &wanted
        && opts.state_machine.is_none()
    {
        named::check(
            &exts,
            Kind::StateMachine,
            id,
            NamedBy::Settings(Scope::Global),
            "active.stateMachine",
        )
        .map_err(|e| LaunchError::Setting(e.to_string()))?;
    }
    super::workflow::attach::attach(&mut session, wanted.as_deref(), recorded).await?;
    session.save_manifest().await;
    Ok(Launched {
        session,
        commands,
        provider_pick,
        controls,
        bus,
        uis,
        loggers,
        extensions: exts.clone(),
        warnings,
        subscribers,
        ui_subscriptions,
        watch,
        _lock: lock,
    })
}

impl Launched {
    /// Wait (briefly) until the UIs have shown everything published so
    /// far, so a prompt never appears in the middle of the last answer.
    pub async fn settle_ui(&self) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        while !self.ui_subscriptions.iter().all(|s| s.is_idle())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// At process exit, after [`shutdown`](Self::shutdown): the
    /// extensions' instances and compiled code are left for the OS to
    /// reclaim with the process. Freeing them one by one (every store,
    /// memory and code mapping) takes milliseconds the person waits for,
    /// and none of them holds anything the OS does not release: the
    /// session's log and manifest are written, loggers flushed, and what
    /// must be stopped (MCP servers) is dropped with the rest of the
    /// session as usual.
    pub fn leave_extensions_to_exit(&self) {
        std::mem::forget(self.extensions.clone());
    }

    /// End the session: observers finish, subscribers drain, loggers flush.
    pub async fn shutdown(&mut self) {
        // An inotify instance ends only after a kernel grace period (about
        // 4 ms here, measured): the watch is closed on a thread of its own
        // while the session closes, not when the process exits.
        if let Some(watch) = self.watch.take() {
            let _ = std::thread::Builder::new()
                .name("stud-unwatch".into())
                .spawn(move || drop(watch));
        }
        // No request is coming now: loggers and observers go on with what
        // they hold (closing waits for the observers).
        self.session.first_request.open();
        self.session.close().await;
        self.bus.close();
        for s in self.subscribers.drain(..) {
            let _ = s.await;
        }
        for logger in &self.loggers {
            let _ = logger.logger_flush().await;
        }
    }
}

/// Link, in the background, what the first turn surely calls, in the
/// order it calls them, so the compiles overlap one another and the rest
/// of the start. Tools, state machines and the providers not chosen are
/// linked at their first call: a tool's spec is cached.
///
/// What the first request does not need (loggers, observers, hooks whose
/// slots all come after it) is linked once `first_request` opens: on 2
/// cores it would take CPU from the request (docs/benchmarks.md).
fn prelink(
    exts: &[Arc<Extension>],
    provider: &str,
    store: Option<&Arc<Extension>>,
    uis: &[Arc<Extension>],
    render: bool,
    first_request: &FirstRequest,
) {
    let of = |k: Kind| exts.iter().filter(move |e| e.kind() == k);
    let chosen = of(Kind::Provider).filter(|e| e.id().as_str() == provider);
    let (hooks_before, hooks_after): (Vec<_>, Vec<_>) =
        of(Kind::Hook).partition(|e| holds_up_first_request(e));
    // The provider's models are listed at start; then RECEIVE_INPUT's
    // hooks run, the input is appended to the store, and the context
    // providers compose the request.
    let soon: VecDeque<Arc<Extension>> = chosen
        .chain(hooks_before)
        .chain(store)
        .chain(of(Kind::ContextProvider))
        .chain(uis.iter().filter(|_| render))
        .cloned()
        .collect();
    let after: VecDeque<Arc<Extension>> = of(Kind::Logger).chain(hooks_after).cloned().collect();
    let span = tracing::Span::current();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    link_in_order(soon, cores, span.clone());
    let opened = first_request.clone();
    // No hurry after the request: one lane, beside the response.
    tokio::spawn(async move {
        opened.wait().await;
        link_in_order(after, 1, span);
    });
}

/// Link `queue` front first on up to `lanes` threads (each takes the next
/// one when it is done). Threads of their own, not tokio's blocking pool:
/// measured, the pool at times left the second lane and the provider's
/// first call queued behind the first lane's whole run.
fn link_in_order(queue: VecDeque<Arc<Extension>>, lanes: usize, span: tracing::Span) {
    let lanes = lanes.min(queue.len());
    let queue = Arc::new(std::sync::Mutex::new(queue));
    for _ in 0..lanes {
        let queue = queue.clone();
        let span = span.clone();
        let lane = move || {
            span.in_scope(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                    let Some(ext) = next else { break };
                    let _ = ext.link_now();
                }
            })
        };
        // Without a thread the first call of each links it instead.
        let _ = std::thread::Builder::new()
            .name("stud-link".into())
            .spawn(lane);
    }
}

/// A guard or transform at or before SEND_REQUEST's `pre` runs (and is
/// waited for) before the first request goes out; observers never hold
/// up the loop.
fn holds_up_first_request(hook: &Extension) -> bool {
    let first_request = HookSlot::new(Stage::SendRequest, Phase::Pre);
    hook.manifest
        .hooks
        .iter()
        .any(|h| h.kind != HookKind::Observer && h.slot <= first_request)
}

/// Load the agent definitions and offer `task` (unless tools are off,
/// `agents.enabled` is false or the extension set leaves it out).
fn offer_agents(
    session: &mut Session,
    opts: &LaunchOptions,
    settings: &Settings,
    set: Option<&ExtensionSet>,
) -> Vec<String> {
    let (catalog, mut warnings) =
        AgentCatalog::load(opts.home.root(), &opts.project, &settings.agents);
    session.agents = Arc::new(catalog);
    let wanted = !opts.no_tools
        && settings.agents.enabled != Some(false)
        && set.is_none_or(|s| s.keeps_task())
        && !session.agents.is_empty();
    if wanted
        && let Err(e) = session
            .roster
            .tools
            .add_kernel_tool(ToolRunner::Task, task_spec(&session.agents))
    {
        warnings.push(e);
    }
    warnings
}

fn profile_of(set: &Option<ExtensionSet>) -> Option<&Profile> {
    set.as_ref().map(|s| &s.choice)
}

/// The security mode and allowlist: flags over the profile over settings.
/// The mode and the allowlist. Entries of the user's global settings
/// reach only the user's own tools ([`Reach::Own`]); an accepted project's
/// entries and `--allow` reach any tool of the session.
fn security(
    opts: &LaunchOptions,
    settings: &Settings,
    profile: Option<&Profile>,
    project_allowlist: &[String],
) -> Result<(Mode, Vec<AllowPattern>), LaunchError> {
    let from_profile = match profile.and_then(|p| p.mode.as_deref()) {
        Some(m) => Some(
            m.parse::<Mode>()
                .map_err(|e| LaunchError::Mode(format!("profile: {e}")))?,
        ),
        None => None,
    };
    let mode = if opts.yolo {
        Mode::Yolo
    } else {
        match (opts.mode.or(from_profile), &settings.security_mode) {
            (Some(m), _) => m,
            (None, Some(s)) => match &s.mode {
                Some(m) => m.parse().map_err(LaunchError::Mode)?,
                None => Mode::Ask,
            },
            (None, None) => Mode::Ask,
        }
    };
    let configured = settings
        .security_mode
        .as_ref()
        .map(|s| s.allowlist.as_slice())
        .unwrap_or_default();
    let reach = |t: &String| {
        if project_allowlist.contains(t) {
            Reach::Any
        } else {
            Reach::Own
        }
    };
    let allowlist = configured
        .iter()
        .map(|t| (t, reach(t)))
        .chain(opts.allow.iter().map(|t| (t, Reach::Any)))
        .map(|(t, r)| AllowPattern::parse(t).map(|p| p.reaching(r)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(LaunchError::Allowlist)?;
    Ok((mode, allowlist))
}

/// What a resumed session's run asks for: what it chose itself, else
/// the mode of the profile the session was recorded with (`-c` keeps a
/// profile), else the settings' (`asked`).
fn resumed_mode(
    asked: Mode,
    chosen_here: bool,
    set: &Option<ExtensionSet>,
) -> Result<Mode, LaunchError> {
    match set.as_ref().and_then(|s| s.choice.mode.as_deref()) {
        Some(m) if !chosen_here => m
            .parse::<Mode>()
            .map_err(|e| LaunchError::Mode(format!("the resumed session's profile: {e}"))),
        _ => Ok(asked),
    }
}

/// The provider: flags over the profile over settings; with none of
/// them, the first provider whose key variable is set, else the offline
/// demo (`scripted`).
fn pick_provider(
    opts: &LaunchOptions,
    settings: &Settings,
    profile: Option<&Profile>,
    exts: &[Arc<Extension>],
) -> (String, ProviderPick) {
    if let Some(p) = opts
        .provider
        .clone()
        .or(profile.and_then(|p| p.provider.clone()))
        .or(settings.active.provider.clone())
    {
        return (p, ProviderPick::Chosen);
    }
    let loaded = |id: &str| {
        exts.iter()
            .any(|e| e.kind() == Kind::Provider && e.id().as_str() == id)
    };
    for (var, id) in KEY_PROVIDERS {
        let set = std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
        if set && loaded(id) {
            return (id.to_string(), ProviderPick::FromKey { var });
        }
    }
    ("scripted".into(), ProviderPick::OfflineDemo)
}

/// Where the provider's name came from, in the order `pick_provider`
/// reads them.
fn provider_named_by(
    opts: &LaunchOptions,
    profile: Option<&Profile>,
    settings: &Settings,
    provenance: &std::collections::BTreeMap<String, String>,
) -> NamedBy {
    if opts.provider.is_some() {
        NamedBy::CommandLine
    } else if profile.is_some_and(|p| p.provider.is_some()) {
        NamedBy::Settings(Scope::Global)
    } else if settings.active.provider.is_some() {
        NamedBy::setting(provenance, "/active/provider")
    } else {
        NamedBy::Default
    }
}

/// The session's configuration: flags over the profile over settings over
/// defaults.
fn session_config(
    opts: &LaunchOptions,
    settings: &Settings,
    profile: Option<&Profile>,
    exts: &[Arc<Extension>],
    global_hook_order: &[String],
) -> Result<(SessionConfig, ProviderPick), LaunchError> {
    let (provider, pick) = pick_provider(opts, settings, profile, exts);
    Ok((
        SessionConfig {
            provider,
            model: opts
                .model
                .clone()
                .or(profile.and_then(|p| p.model.clone()))
                .or(settings.active.model.clone()),
            max_iterations: opts
                .max_iterations
                .or(settings.runtime.continuation.max_iterations)
                .unwrap_or(DEFAULT_MAX_ITERATIONS)
                .max(1),
            tool_parallelism: opts
                .tool_parallelism
                .or(settings.runtime.tool_parallelism)
                .unwrap_or(DEFAULT_TOOL_PARALLELISM)
                .max(1),
            tool_output_limit: settings
                .runtime
                .tool_output_limit
                .unwrap_or(DEFAULT_TOOL_OUTPUT_LIMIT)
                .max(1024),
            response_limits: super::response_limits::ResponseLimits::from_settings(
                &settings.runtime.response_limits,
            ),
            system_prompt: settings.system_prompt.clone(),
            hook_order: HookOrder::of(&settings.ordering.hooks, global_hook_order),
            tools_enabled: !opts.no_tools,
            retry: RetryPolicy::from_settings(&settings.runtime.retries),
            max_tokens: settings.active.max_tokens,
            temperature: settings.active.temperature,
            thinking: match settings.active.thinking.as_deref() {
                None | Some("off") => ThinkingLevel::Off,
                Some("low") => ThinkingLevel::Low,
                Some("medium") => ThinkingLevel::Medium,
                Some("high") => ThinkingLevel::High,
                Some(other) => {
                    return Err(LaunchError::Setting(format!(
                        "settings.json: active.thinking: `{other}` is not a thinking level; use \"off\", \"low\", \"medium\" or \"high\""
                    )));
                }
            },
            cache_hints: settings.active.cache_hints.unwrap_or(false),
            compaction: CompactionConfig::from_settings(&settings.compaction),
            pricing: settings.pricing.clone(),
            max_cost_usd: opts.max_cost_usd.or(settings.budget.max_cost_usd),
        },
        pick,
    ))
}

/// Only the interactor the user chose answers; every other UI observes.
/// The UI that answers questions: the set's, else `active.interactor`,
/// else the full-screen `tui` on a terminal, else `console`.
fn interactor_id(
    opts: &LaunchOptions,
    settings: &Settings,
    chosen_ui: Option<&str>,
    uis: &[Arc<Extension>],
) -> String {
    chosen_ui
        .map(str::to_string)
        .or(settings.active.interactor.clone())
        .or_else(|| {
            opts.screen.as_ref().and_then(|_| {
                uis.iter()
                    .find(|u| {
                        u.id().as_str() == SCREEN_INTERACTOR && may_answer(u) && u.ui_has_screen()
                    })
                    .map(|u| u.id().to_string())
            })
        })
        .unwrap_or_else(|| DEFAULT_INTERACTOR.to_string())
}

fn interactions(
    opts: &LaunchOptions,
    settings: &Settings,
    interactor_id: &str,
    uis: &[Arc<Extension>],
    bus: &Bus,
    warnings: &mut Vec<String>,
) -> Arc<Interactions> {
    let named = uis.iter().find(|u| u.id().as_str() == interactor_id);
    let chosen = named.filter(|u| may_answer(u));
    match named {
        _ if opts.headless => {}
        Some(project) if chosen.is_none() => warnings.push(format!(
            "active.interactor: `{interactor_id}` is a {} extension here (a trusted project brought its own `{interactor_id}`); a project extension never answers questions, since answering is approving. Nobody can answer, so a call that needs an approval halts the turn",
            project.scope
        )),
        None => warnings.push(format!(
            "settings.json: active.interactor: `{interactor_id}` is not a loaded UI extension (loaded: {}); nobody can answer questions, so a call that needs an approval halts the turn",
            uis.iter().map(|u| u.id().to_string()).collect::<Vec<_>>().join(", ")
        )),
        Some(_) => {}
    }
    let interactor = chosen.filter(|_| !opts.headless).cloned();
    Arc::new(Interactions::new(
        interactor,
        opts.headless,
        opts.yolo,
        settings
            .runtime
            .interaction_timeout_ms
            .map(std::time::Duration::from_millis)
            .unwrap_or(DEFAULT_TIMEOUT),
        bus.clone(),
    ))
}

/// The session store: `active.sessionStore` (global settings only, so
/// never a project's store), else the first bundled or global one loaded.
/// A store writes the manifests resume believes (the state machine a
/// session ran, its project root), so a project's store is never chosen
/// by default, not even when the user's own failed to load: then no store
/// keeps the session.
fn choose_store(
    settings: &Settings,
    named_by: NamedBy,
    stores: Vec<Arc<Extension>>,
) -> Result<Option<Arc<Extension>>, LaunchError> {
    Ok(match &settings.active.session_store {
        Some(id) => Some({
            named::check(
                &stores,
                Kind::SessionStore,
                id,
                named_by,
                "active.sessionStore",
            )
            .map_err(|e| LaunchError::Setting(e.to_string()))?;
            stores
                .iter()
                .find(|s| s.id().as_str() == id)
                .cloned()
                .ok_or_else(|| {
                    LaunchError::Setting(format!(
                        "settings.json: active.sessionStore: `{id}` is not a loaded session store (loaded: {})",
                        stores.iter().map(|s| s.id().to_string()).collect::<Vec<_>>().join(", ")
                    ))
                })?
        }),
        None => stores.iter().find(|s| s.scope <= Scope::Global).cloned(),
    })
}
