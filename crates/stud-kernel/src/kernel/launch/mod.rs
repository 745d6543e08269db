//! Assembling a session from what is installed, in typed phases: each a
//! function from what the phases before it made to what the next needs,
//! and none changes what an earlier one built.
//!
//! 1. [`configure`]: the settings layers, grants, the extension set, the
//!    mode and allowlist;
//! 2. [`discover`]: the engine and the extension folders (read side by
//!    side), the registry that loads from them;
//! 3. [`load`]: the extensions, the session store (chosen, and starting
//!    on a task of its own unless a session is resumed through it), a
//!    resumed session's record, the extension set applied;
//! 4. [`subscribe`]: the UIs and loggers, subscribed before anything
//!    publishes or asks (an MCP server's trust question at start goes
//!    through the full-screen UI, so its driver must already run);
//! 5. [`parts`]: interactions, commands, authority, the session's
//!    configuration, agents, MCP servers, the reloader and the store;
//! 6. [`open`]: the session made from its parts, its store settled (the
//!    store's failure stops the launch here, or before the first MCP
//!    server starts), locked, announced, resumed, its state machine
//!    attached.
//!
//! The CLI, ACP and the benchmarks start sessions through [`launch`].

mod configure;
mod discover;
mod interactor;
mod load;
mod open;
mod parts;
mod prelink;
mod session_config;
pub mod store_choice;
mod subscribe;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::Mode;
use super::commands::Commands;
use super::events::{Bus, Subscriber};
use super::extension_set::SetChoice;
use super::persist::{ResumeError, ResumeTarget};
use super::roster::SessionError;
use super::screen_ui::Control;
use super::services::TerminalOut;
use super::session::Session;
use super::session_lock::{SessionLock, SessionLockError};
use crate::config::SettingsError;
use crate::extensions::ProjectScope;
use crate::extensions::trust::recorded_scope;
use crate::extensions::watch::Watch;
use crate::paths::StudHome;
use crate::runtime::{Extension, RuntimeError};
use crate::tty::ScreenSlot;

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
    /// Make this session a replay of a recorded one (`stud session replay`).
    pub replay: Option<ReplayLaunch>,
}

/// What makes a launch a replay: what answers it, and the extensions it
/// runs from other folders (`--with ID=DIR`).
pub struct ReplayLaunch {
    pub replayer: std::sync::Arc<crate::kernel::replay::Replayer>,
    pub substitutes: Vec<(String, PathBuf)>,
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
            replay: None,
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
    #[error(transparent)]
    Substitute(#[from] crate::extensions::discovery::SubstituteError),
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
    /// The host's side of the imports, and its own terminal signals.
    pub services: Arc<crate::kernel::services::KernelServices>,
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
    let mut warnings = Vec::new();
    let configured = configure::configure(&opts, &mut warnings)?;
    let found = discover::discover(&opts, &configured, &mut warnings).await?;
    let mut loaded = load::load(&opts, &configured, &found, &mut warnings).await?;
    let subscribed = subscribe::subscribe(&opts, &configured, &found, &loaded, &mut warnings);
    let failed = std::mem::take(&mut loaded.failed);
    let launched = match parts::assemble(
        &opts,
        &configured,
        &found,
        &mut loaded,
        &subscribed,
        &mut warnings,
    )
    .await
    {
        Ok(parts) => open::open(opts, configured, found, loaded, subscribed, parts, warnings).await,
        Err(e) => Err(e),
    };
    launched.map_err(|e| e.naming_load_failure(&failed))
}

impl LaunchError {
    /// A provider that is missing because it did not load (a config its
    /// schema refuses, say) is named with why, not only as missing.
    fn naming_load_failure(self, failed: &[(String, String)]) -> Self {
        match self {
            LaunchError::Session(SessionError::ProviderMissing { wanted, available }) => {
                match failed.iter().find(|(id, _)| *id == wanted) {
                    Some((_, reason)) => LaunchError::Session(SessionError::ProviderFailed {
                        wanted,
                        reason: reason.clone(),
                    }),
                    None => {
                        LaunchError::Session(SessionError::ProviderMissing { wanted, available })
                    }
                }
            }
            other => other,
        }
    }
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
        // Every extension with a live instance gets `deactivate` and
        // `dispose`, all at once, each bounded.
        // Command components loaded at their first use go too.
        futures::future::join_all(
            self.extensions
                .iter()
                .chain(self.commands.loaded())
                .map(|e| e.retire(crate::runtime::RETIRE_WITHIN)),
        )
        .await;
    }
}
