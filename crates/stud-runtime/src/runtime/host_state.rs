//! The data of one extension's `Store`: its WASI context (no env, no
//! sockets, preopens only as granted), its limits, the deadline of the
//! call in progress, and a handle to what it shares with its other
//! instances (config, state slot, grants).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stud_protocol::events::KernelEvent;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::cancel::CancelFlag;
use super::caps::confine::ProcessConfinement;
use super::caps::http::NetAccess;
use super::emit_limit::{Admit, EmitLimiter};
use super::limits::MemoryLimiter;
use super::services::Services;
use super::stderr::TailBuffer;
use crate::manifest::{ExtensionId, FsAccess, Kind, Limits};

/// Guest path of the project directory when granted.
pub const PROJECT_GUEST_DIR: &str = "/project";
/// Guest path of the extension's private data directory when granted.
pub const DATA_GUEST_DIR: &str = "/data";

/// Largest value the state slot accepts.
pub const MAX_SLOT_BYTES: usize = 1 << 20;

/// What every instance of one loaded extension shares.
pub struct ExtensionContext {
    pub id: ExtensionId,
    pub kind: Kind,
    /// Validated config as JSON text.
    pub config: String,
    pub limits: Limits,
    pub slot: StateSlot,
    pub dirs: Vec<DirGrant>,
    /// The protected-path policy for its file calls.
    pub files: super::protected_paths::FileGuard,
    pub secrets: Vec<String>,
    /// Secret values resolved from settings references; a name missing
    /// here falls back to [`Services::secret`]. `Err` says why it is unset.
    pub secret_values: HashMap<String, Result<String, String>>,
    /// Outbound network, when the manifest asks for any.
    pub net: Option<Arc<NetAccess>>,
    /// The host:port pairs its `socket` import may reach.
    pub sockets: Vec<super::caps::socket::SocketGrant>,
    pub processes: ProcessConfinement,
    pub services: Arc<dyn Services>,
    /// How fast this extension may publish events and log lines.
    pub emits: Mutex<EmitLimiter>,
    /// What it costs, across its instances.
    pub meter: Arc<super::meter::Meter>,
}

impl ExtensionContext {
    /// Whether one more event or log line may go out now; reports what
    /// was suppressed before it, once.
    pub fn admit_emit(&self) -> bool {
        let verdict = self.emits.lock().unwrap_or_else(|p| p.into_inner()).admit();
        match verdict {
            Admit::Drop => false,
            Admit::Pass { suppressed } => {
                if suppressed > 0 {
                    self.services
                        .kernel_event(KernelEvent::ExtensionEventsSuppressed {
                            extension: self.id.to_string(),
                            count: suppressed,
                            reason: "the extension published events faster than the bus accepts from one extension".into(),
                        });
                }
                true
            }
        }
    }
}

/// A host directory mapped into the guest.
#[derive(Debug, Clone)]
pub struct DirGrant {
    pub host: PathBuf,
    pub guest: &'static str,
    pub access: FsAccess,
}

/// The extension's state slot: owned by the host so it outlives instances
/// (traps, reloads), validated on write.
#[derive(Clone, Default)]
pub struct StateSlot {
    value: Arc<Mutex<Option<String>>>,
    schema: Option<Arc<SlotSchema>>,
}

/// The manifest's state schema, compiled at the first write (most slots of
/// a session are never written).
struct SlotSchema {
    json: serde_json::Value,
    compiled: std::sync::OnceLock<Result<Arc<jsonschema::Validator>, String>>,
}

impl StateSlot {
    pub fn new(schema: Option<serde_json::Value>) -> Self {
        StateSlot {
            value: Arc::default(),
            schema: schema.map(|json| {
                Arc::new(SlotSchema {
                    json,
                    compiled: Default::default(),
                })
            }),
        }
    }

    pub fn read(&self) -> Option<String> {
        self.value.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replace the value after checking it is JSON of the declared shape.
    pub fn write(&self, json: String) -> Result<(), String> {
        if json.len() > MAX_SLOT_BYTES {
            return Err(format!(
                "state value is {} bytes; the limit is {MAX_SLOT_BYTES}",
                json.len()
            ));
        }
        let value: serde_json::Value =
            serde_json::from_str(&json).map_err(|e| format!("state value is not JSON: {e}"))?;
        if let Some(schema) = &self.schema {
            let validator = schema
                .compiled
                .get_or_init(|| {
                    crate::manifest::compiled_schema::validator(&schema.json)
                        .map_err(|e| format!("the manifest's state schema does not compile: {e}"))
                })
                .clone()?;
            if let Err(e) = validator.validate(&value) {
                return Err(format!(
                    "state value does not match the manifest's state schema at `{}`: {e}",
                    e.instance_path()
                ));
            }
        }
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = Some(json);
        Ok(())
    }
}

/// Why a call was interrupted at an epoch check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    Deadline,
    Cancelled,
}

/// The deadline of the call in progress, shared between the store (the
/// epoch check while guest code runs) and the watchdog the caller runs
/// beside the call (for time spent inside host calls: a WASI sleep, a
/// slow file). Time the guest spends waiting in a host import that has its
/// own timeout (a person answering, the network, a process) is paused, so
/// a slow host (or person) never counts against the guest's own budget.
#[derive(Debug, Default)]
pub struct CallDeadline {
    clock: Arc<DeadlineClock>,
    pub cancel: CancelFlag,
}

#[derive(Debug, Default)]
pub struct DeadlineClock {
    state: Mutex<ClockState>,
}

#[derive(Debug, Default)]
struct ClockState {
    at: Option<Instant>,
    /// Host waits in progress, and since when the first began.
    paused: u32,
    paused_since: Option<Instant>,
    fired: Option<Interrupted>,
}

impl DeadlineClock {
    fn state(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why the call was interrupted, if it was.
    pub fn fired(&self) -> Option<Interrupted> {
        self.state().fired
    }

    /// No deadline any more (the call ended, or was abandoned).
    pub fn disarm(&self) {
        self.state().at = None;
    }

    /// Mark the call interrupted (the watchdog gave up on it).
    pub fn fire(&self, why: Interrupted) {
        self.state().fired.get_or_insert(why);
    }

    /// Time left, `None` while paused or when nothing is armed.
    pub fn remaining(&self) -> Option<Duration> {
        let s = self.state();
        if s.paused > 0 {
            return None;
        }
        s.at.map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// Resolves once the deadline has passed while not paused.
    pub async fn overdue(&self) {
        loop {
            match self.remaining() {
                Some(left) if left.is_zero() => return,
                Some(left) => tokio::time::sleep(left).await,
                // Paused (a host wait with its own timeout) or disarmed.
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn resume(&self) {
        let mut s = self.state();
        s.paused = s.paused.saturating_sub(1);
        if s.paused == 0
            && let Some(since) = s.paused_since.take()
            && let Some(at) = s.at.as_mut()
        {
            *at += since.elapsed();
        }
    }
}

/// A host wait in progress: the deadline stands still until it drops.
pub struct Paused(Arc<DeadlineClock>);

impl Drop for Paused {
    fn drop(&mut self) {
        self.0.resume();
    }
}

impl CallDeadline {
    pub fn arm(&mut self, timeout: Duration, cancel: CancelFlag) {
        self.clock = Arc::new(DeadlineClock::default());
        self.clock.state().at = Some(Instant::now() + timeout);
        self.cancel = cancel;
    }

    pub fn disarm(&self) {
        self.clock.disarm();
    }

    /// The clock the caller's watchdog watches.
    pub fn clock(&self) -> Arc<DeadlineClock> {
        self.clock.clone()
    }

    /// Stop the clock while the guest waits in a host import that has its
    /// own timeout; it runs again when the guard drops.
    pub fn pause(&self) -> Paused {
        let mut s = self.clock.state();
        s.paused += 1;
        if s.paused == 1 {
            s.paused_since = Some(Instant::now());
        }
        drop(s);
        Paused(self.clock.clone())
    }

    /// Why the call was interrupted, if it was.
    pub fn fired(&self) -> Option<Interrupted> {
        self.clock.fired()
    }

    /// Checked at every epoch tick while the guest runs.
    pub fn check(&self) -> Option<Interrupted> {
        let hit = if self.cancel.is_cancelled() {
            Some(Interrupted::Cancelled)
        } else if self.clock.remaining().is_some_and(|left| left.is_zero()) {
            Some(Interrupted::Deadline)
        } else {
            None
        };
        if let Some(why) = hit {
            self.clock.fire(why);
        }
        hit
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves once the call is cancelled, for host imports that wait
    /// (processes, network) to race against.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static {
        self.cancel.cancelled()
    }
}

pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub ext: Arc<ExtensionContext>,
    pub limiter: MemoryLimiter,
    pub deadline: CallDeadline,
    pub stderr: TailBuffer,
    /// The tool call being served, so progress events can name it.
    pub call_id: Option<String>,
    /// The export being called, while a call runs (`init` while an
    /// instance starts).
    pub serving: &'static str,
    /// `files` walks this instance holds open (each has threads).
    pub open_walks: Arc<std::sync::atomic::AtomicUsize>,
    /// When the guest called into the host, while it is there.
    pub in_host_since: Option<std::time::Instant>,
}

/// The exports during which an extension may act on the world (start a
/// process, send a request): the ones an approved call or a model request
/// runs in. Everything else (`init`, `describe`, `approval-key`, ...) runs
/// before or outside any approval, so an effect there would bypass it.
const EFFECTFUL_EXPORTS: &[&str] = &["invoke", "send", "next", "models"];

impl HostState {
    /// `Err` with a message naming the export when `what` (an effectful
    /// import) may not run now.
    pub fn effects_allowed(&self, what: &str) -> Result<(), String> {
        if EFFECTFUL_EXPORTS.contains(&self.serving) {
            return Ok(());
        }
        // A hook granted `exec` runs its commands at the slot it is called
        // for (a `PreToolUse` command runs before the call is decided, as
        // the person who wrote it meant).
        if self.ext.kind == crate::manifest::Kind::Hook && self.serving == "run" {
            return Ok(());
        }
        // A session store's every call is storage: it reaches its database
        // (a socket, the only effect its world has, to the exact host and
        // port the person named) from `init` on, to say at start when the
        // database is out of reach, and at `deactivate` to write what it held.
        if self.ext.kind == crate::manifest::Kind::SessionStore {
            return Ok(());
        }
        Err(format!(
            "extension `{}` called `{what}` from `{}`; processes and network requests are only allowed while it serves an approved call or a model request ({})",
            self.ext.id,
            self.serving,
            EFFECTFUL_EXPORTS.join(", ")
        ))
    }
}

impl HostState {
    pub fn new(ext: Arc<ExtensionContext>) -> Result<Self, String> {
        let stderr = TailBuffer::new(4096);
        let mut builder = WasiCtxBuilder::new();
        builder.stderr(stderr.clone());
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            // File calls inline, not via a hop to the blocking pool per
            // call: 3-5x faster tools. Every guest call runs on a thread of
            // its own (`Extension::run_call`), so a call blocked in the
            // kernel (a FIFO a hostile tool opens) holds only that thread,
            // and its watchdog gives up on it.
            .allow_blocking_current_thread(true);
        for dir in &ext.dirs {
            let perms = match dir.access {
                FsAccess::Read => FsPerms::ReadOnly,
                FsAccess::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&dir.host, dir.guest, perms)
                .map_err(|e| format!("cannot open {} for the guest: {e}", dir.host.display()))?;
        }
        Ok(HostState {
            wasi: builder.build(),
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(ext.limits.memory_mib).metered(ext.meter.clone()),
            ext,
            deadline: CallDeadline::default(),
            stderr,
            call_id: None,
            serving: "init",
            open_walks: Arc::default(),
            in_host_since: None,
        })
    }

    /// Host-side resources handed to the guest (HTTP responses).
    pub fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// The guest path of the project directory, if granted.
    pub fn project_guest_dir(&self) -> Option<String> {
        self.ext
            .dirs
            .iter()
            .find(|d| d.guest == PROJECT_GUEST_DIR)
            .map(|d| d.guest.to_string())
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
