//! A loaded extension and its live instances. Calls go through one place
//! that picks a free lane of the extension's pool, arms the deadline,
//! classifies failures and throws a faulted instance away; the next call
//! on that lane instantiates a fresh one (from the `InstancePre`) that
//! sees the same state slot.
//!
//! A tool has up to `[limits] instances` lanes (default 4), so parallel
//! calls of one tool run at once; every other kind has one. Instances are
//! made when concurrency needs them: calls that follow each other all use
//! the first lane. The state slot is host-held and shared by the
//! instances (last write wins); guest memory is per instance.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, Notify, OwnedMutexGuard};
use wasmtime::component::InstancePre;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::Runtime;
use super::cache::CodeSource;
use super::cancel::CancelFlag;
use super::code::{LazyCode, Linked};
use super::contract::v0_1::exports::stud::extension as ex;
use super::error::CallError;
use super::host_state::{DeadlineClock, ExtensionContext, HostState, Interrupted};
use super::inspect::ComponentInfo;
use super::interrupt::{CancelCell, ClockCell};
use super::limits::MemoryLimitExceeded;
use super::services::ExtError;
use crate::digest::Sha256Digest;
use crate::manifest::{ExtensionId, Kind, Manifest};

/// How long a call stopped by its watchdog (deadline or cancel) may take
/// to notice before it is abandoned: two epoch ticks. Guest code traps at
/// its next tick (or at once when cancelled: see [`Extension::cancel`]),
/// host waits that race the cancel flag return at once; what is left is a
/// wait inside WASI (a sleep, a poll), which nothing interrupts and which
/// is abandoned with its instance. Short, because that wait is what a
/// deadline or Ctrl-C is held up by (the bound is 50 ms).
pub const GIVE_UP_GRACE: Duration = super::engine::TICK.saturating_mul(2);

/// Export lookups done once per component.
pub enum KindIndices {
    Provider(ex::provider_api::GuestIndices),
    Tool(ex::tool_api::GuestIndices),
    Hook(ex::hook_api::GuestIndices),
    /// The screen export is optional (only full-screen UIs have it).
    Ui(
        ex::ui_api::GuestIndices,
        Option<ex::ui_screen::GuestIndices>,
    ),
    Logger(ex::logger_api::GuestIndices),
    ContextProvider(ex::context_provider_api::GuestIndices),
    StateMachine(ex::state_machine_api::GuestIndices),
    Command(ex::command_api::GuestIndices),
    SessionStore(ex::session_store_api::GuestIndices),
}

/// A UI's exports: the line contract, and the screen one if it has it.
#[derive(Clone)]
pub struct UiGuest {
    pub api: ex::ui_api::Guest,
    pub screen: Option<ex::ui_screen::Guest>,
}

/// The typed exports of one live instance.
#[derive(Clone)]
pub enum KindGuest {
    Provider(ex::provider_api::Guest),
    Tool(ex::tool_api::Guest),
    Hook(ex::hook_api::Guest),
    Ui(UiGuest),
    Logger(ex::logger_api::Guest),
    ContextProvider(ex::context_provider_api::Guest),
    StateMachine(ex::state_machine_api::Guest),
    Command(ex::command_api::Guest),
    SessionStore(ex::session_store_api::Guest),
}

impl KindIndices {
    pub fn new(
        kind: Kind,
        pre: &InstancePre<HostState>,
    ) -> wasmtime::Result<(Self, ex::lifecycle::GuestIndices)> {
        let lifecycle = ex::lifecycle::GuestIndices::new(pre)?;
        let kind = match kind {
            Kind::Provider => Self::Provider(ex::provider_api::GuestIndices::new(pre)?),
            Kind::Tool => Self::Tool(ex::tool_api::GuestIndices::new(pre)?),
            Kind::Hook => Self::Hook(ex::hook_api::GuestIndices::new(pre)?),
            Kind::Ui => Self::Ui(
                ex::ui_api::GuestIndices::new(pre)?,
                ex::ui_screen::GuestIndices::new(pre).ok(),
            ),
            Kind::Logger => Self::Logger(ex::logger_api::GuestIndices::new(pre)?),
            Kind::ContextProvider => {
                Self::ContextProvider(ex::context_provider_api::GuestIndices::new(pre)?)
            }
            Kind::StateMachine => {
                Self::StateMachine(ex::state_machine_api::GuestIndices::new(pre)?)
            }
            Kind::Command => Self::Command(ex::command_api::GuestIndices::new(pre)?),
            Kind::SessionStore => {
                Self::SessionStore(ex::session_store_api::GuestIndices::new(pre)?)
            }
        };
        Ok((kind, lifecycle))
    }

    fn load(
        &self,
        store: &mut Store<HostState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<KindGuest> {
        Ok(match self {
            Self::Provider(i) => KindGuest::Provider(i.load(store, instance)?),
            Self::Tool(i) => KindGuest::Tool(i.load(store, instance)?),
            Self::Hook(i) => KindGuest::Hook(i.load(store, instance)?),
            Self::Ui(api, screen) => KindGuest::Ui(UiGuest {
                api: api.load(&mut *store, instance)?,
                screen: match screen {
                    Some(s) => Some(s.load(store, instance)?),
                    None => None,
                },
            }),
            Self::Logger(i) => KindGuest::Logger(i.load(store, instance)?),
            Self::ContextProvider(i) => KindGuest::ContextProvider(i.load(store, instance)?),
            Self::StateMachine(i) => KindGuest::StateMachine(i.load(store, instance)?),
            Self::Command(i) => KindGuest::Command(i.load(store, instance)?),
            Self::SessionStore(i) => KindGuest::SessionStore(i.load(store, instance)?),
        })
    }
}

/// A live instance: its store and its typed exports.
pub struct Instance {
    pub(crate) store: Store<HostState>,
    pub(crate) guest: KindGuest,
    /// `deactivate` and `dispose`, called when the extension is retired.
    pub(crate) lifecycle: ex::lifecycle::Guest,
    /// Which instantiation this is; resources from an older one are dead.
    pub(crate) generation: u64,
    /// A call is in progress. Still set at the next call means the previous
    /// call's future was dropped mid-call: the instance cannot be entered
    /// again and is replaced.
    pub(crate) busy: bool,
}

/// Where a live instance is kept. A call holds the slot's lock while it
/// runs; a call its watchdog abandoned keeps its slot, and the lane moves
/// on to a fresh one.
type Slot = Arc<Mutex<Option<Instance>>>;

/// One place an instance lives, with what watches the call running on it.
#[derive(Default)]
struct Lane {
    slot: std::sync::Mutex<Slot>,
    /// Woken when the slot is replaced, so calls queued on an abandoned
    /// slot move to the new one.
    slot_replaced: Notify,
    /// The cancellation flag of the call in progress.
    cancel: CancelCell,
    /// The deadline clock of the call (or instantiation) in progress.
    clock: ClockCell,
}

tokio::task_local! {
    /// The stop handle of the call this task is making, if its caller
    /// gave one (see [`CallStop`]).
    static CALL_STOP: CallStop;
}

/// Stops one call, on whichever lane it runs: cancelling a call must not
/// stop another caller's call of the same tool on a sibling lane. Bound
/// to its lane when the call has one; a cancel that comes first is kept
/// and applied when the call is armed.
#[derive(Clone, Default)]
pub struct CallStop(Arc<std::sync::Mutex<StopState>>);

#[derive(Default)]
struct StopState {
    cancelled: bool,
    lane: Option<(Arc<Core>, usize)>,
}

impl CallStop {
    /// Stop the call: guest code at its next loop iteration or call, a
    /// host wait at once, anything else by its watchdog.
    pub fn cancel(&self) {
        let lane = {
            let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
            s.cancelled = true;
            s.lane.clone()
        };
        if let Some((core, i)) = lane {
            core.stop_lane(i);
        }
    }

    /// Run `call` (an extension call future) under this handle.
    pub async fn scope<F: Future>(self, call: F) -> F::Output {
        CALL_STOP.scope(self, call).await
    }

    fn is_cancelled(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).cancelled
    }

    fn bind(&self, core: Arc<Core>, lane: usize) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).lane = Some((core, lane));
    }
}

/// A boxed future borrowing the instance it runs on.
pub(crate) type CallFuture<'a, T> =
    Pin<Box<dyn Future<Output = wasmtime::Result<Result<T, ExtError>>> + Send + 'a>>;

/// What a call needs besides its own arguments: everything that makes and
/// arms instances. Shared with the thread the call runs on.
struct Core {
    runtime: Arc<Runtime>,
    ctx: Arc<ExtensionContext>,
    /// Compiled and linked at the first call.
    code: LazyCode,
    /// The pool: one lane per instance that may run at once.
    lanes: Box<[Lane]>,
    /// Which lane a call waits for when all are busy.
    next_wait: AtomicUsize,
    instantiations: AtomicU64,
}

/// A loaded extension, ready to call.
pub struct Extension {
    pub manifest: Manifest,
    /// Where it was found; with the id and the digest, its identity.
    pub scope: crate::scope::Scope,
    pub digest: Sha256Digest,
    /// What the component imports and exports: read at load, or for a
    /// bundled one when first asked.
    info: std::sync::OnceLock<Option<ComponentInfo>>,
    pub(crate) ctx: Arc<ExtensionContext>,
    /// The manifest's `[[hooks]]` that attach under its config.
    hooks: Vec<crate::manifest::HookRegistration>,
    /// A context provider whose `[context] when-config` its config fills.
    provides_context: bool,
    /// Where its `[context.when-project-has]` names are looked for, and
    /// the names; `None`: it is asked whatever the project holds.
    project_files: Option<(std::path::PathBuf, Vec<String>)>,
    core: Arc<Core>,
    /// Calls, failures and latency, for `/health`.
    stats: super::health::CallStats,
}

impl Extension {
    pub(crate) fn new(
        runtime: Arc<Runtime>,
        manifest: Manifest,
        scope: crate::scope::Scope,
        digest: Sha256Digest,
        info: Option<ComponentInfo>,
        ctx: Arc<ExtensionContext>,
        code: LazyCode,
    ) -> Self {
        let known = std::sync::OnceLock::new();
        let lanes = (0..manifest.limits.pool_size())
            .map(|_| Lane::default())
            .collect();
        if let Some(info) = info {
            let _ = known.set(Some(info));
        }
        // The config was validated as JSON at load; unreadable, every hook
        // attaches (`attaches_with` leaves out only a plainly empty key).
        let config = serde_json::from_str(&ctx.config).unwrap_or(serde_json::Value::Null);
        let hooks = manifest
            .hooks
            .iter()
            .filter(|h| h.attaches_with(&config) || config.is_null())
            .cloned()
            .collect();
        let provides_context = manifest.kind == crate::manifest::Kind::ContextProvider
            && manifest
                .context
                .as_ref()
                .is_none_or(|c| c.provides_with(&config) || config.is_null());
        let project_files = project_files(&manifest, &config, &ctx.dirs);
        Extension {
            manifest,
            hooks,
            provides_context,
            project_files,
            scope,
            digest,
            info: known,
            core: Arc::new(Core {
                runtime,
                ctx: ctx.clone(),
                code,
                lanes,
                next_wait: AtomicUsize::new(0),
                instantiations: AtomicU64::new(0),
            }),
            ctx,
            stats: Default::default(),
        }
    }

    pub fn id(&self) -> &ExtensionId {
        &self.ctx.id
    }

    /// Whether `ctx` is this extension's own context: the identity a host
    /// import is called with (not its id, which another could share).
    pub fn is_context(&self, ctx: &ExtensionContext) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.ctx), ctx)
    }

    pub fn kind(&self) -> Kind {
        self.ctx.kind
    }

    /// Where it attaches: its manifest's `[[hooks]]`, less those whose
    /// `when-config` key its config leaves empty.
    pub fn hooks(&self) -> &[crate::manifest::HookRegistration] {
        &self.hooks
    }

    /// Whether the session asks it for fragments: a context provider, less
    /// one whose `[context] when-config` key its config leaves empty (it
    /// would add nothing, so it is never linked or called).
    pub fn provides_context(&self) -> bool {
        self.provides_context
    }

    /// Whether it has something to read now: a context provider with
    /// `[context.when-project-has]` only while one of the names it reads
    /// exists in the project root (anything there counts, a link or a
    /// folder too, and so does a name that cannot be looked up: only a
    /// plain "not found" for every name leaves it out). Looked up before
    /// each request, so a file made mid-session is taken up at the next.
    pub fn finds_context(&self) -> bool {
        self.project_files
            .as_ref()
            .is_none_or(|(root, names)| any_there(root, names))
    }

    /// Its imports and exports (`None`: not a readable component, which
    /// its first call reports).
    pub fn info(&self) -> Option<&ComponentInfo> {
        self.info
            .get_or_init(|| match self.core.code.get() {
                Some(Ok(linked)) if linked.info.is_some() => linked.info.clone(),
                _ => ComponentInfo::inspect(self.core.code.bytes()).ok(),
            })
            .as_ref()
    }

    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.core.runtime
    }

    /// Where its machine code came from; `None` until it is linked (at
    /// its first call, or [`link_now`](Self::link_now)).
    pub fn code_source(&self) -> Option<CodeSource> {
        match self.core.code.get() {
            Some(Ok(linked)) => Some(linked.source),
            _ => None,
        }
    }

    /// Read (or compile) and link its code now, on this (blocking) thread,
    /// so a failure shows before the first call (a hot reload). Done at
    /// most once; a failure is kept, and its message names the extension.
    pub fn link_now(&self) -> Result<CodeSource, String> {
        self.core
            .code
            .link_blocking(&self.core.runtime)
            .map(|l| l.source)
    }

    /// Whether its code is linked (or failed to link) already.
    pub fn is_linked(&self) -> bool {
        self.core.code.get().is_some()
    }

    /// Take on linking it ahead (then [`link_now`](Self::link_now));
    /// `false` when it is linked, or another link lane has it queued or is
    /// linking it: a lane started for it would only wait for that one.
    pub fn claim_link(&self) -> bool {
        self.core.code.claim()
    }

    /// Give up a [`claim_link`](Self::claim_link) that no lane will link.
    pub fn release_link_claim(&self) {
        self.core.code.release();
    }

    /// How many times an instance was created (1 + restarts after faults).
    pub fn instantiations(&self) -> u64 {
        self.core.instantiations.load(Ordering::Relaxed)
    }

    /// Its calls so far: how many, how many failed (and the last error),
    /// how long they took.
    pub fn health(&self) -> super::health::Health {
        super::health::Health {
            instantiations: self.instantiations(),
            metered: self.ctx.meter.snapshot(),
            ..self.stats.snapshot()
        }
    }

    /// What it costs so far, shared by its instances.
    pub fn meter(&self) -> &super::meter::Meter {
        &self.ctx.meter
    }

    /// The current state slot value.
    pub fn state(&self) -> Option<String> {
        self.ctx.slot.read()
    }

    /// Put a saved state slot value back (resume); it must match the
    /// manifest's state schema.
    pub fn restore_state(&self, json: String) -> Result<(), String> {
        self.ctx.slot.write(json)
    }

    /// Stop every call in progress: guest code at its next loop
    /// iteration or call, a host wait at once, anything else by its
    /// watchdog. One call alone is stopped with a [`CallStop`].
    pub fn cancel(&self) {
        for i in 0..self.core.lanes.len() {
            self.core.stop_lane(i);
        }
    }

    /// How many instances may serve calls at once.
    pub fn pool_size(&self) -> usize {
        self.core.lanes.len()
    }

    /// Create the instance now (and run `init`), if there is none.
    pub async fn start(&self) -> Result<(), CallError> {
        self.dispatch("start", true, None, |_| Box::pin(async { Ok(Ok(())) }))
            .await
            .map(|_| ())
    }

    /// Throw the live instances away and start a fresh one (same state
    /// slot).
    pub async fn restart(&self) -> Result<(), CallError> {
        for i in 0..self.core.lanes.len() {
            self.replace_slot(i);
        }
        self.start().await
    }

    /// Run one export call: `call` gets the live instance (created if
    /// needed) on a thread of tokio's blocking pool, so guest code and the
    /// file system calls it makes inline never hold the kernel's runtime.
    pub(crate) async fn run_call<T, F>(&self, func: &'static str, call: F) -> Result<T, CallError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut Instance) -> CallFuture<'a, T> + Send + 'static,
    {
        if let Some(budget_ms) = self.ctx.limits.cpu_ms_per_turn {
            let used_ms = self.ctx.meter.turn_cpu_ms();
            if used_ms >= f64::from(budget_ms) {
                let e = CallError::CpuBudget {
                    id: self.ctx.id.clone(),
                    func,
                    budget_ms,
                    used_ms,
                };
                self.stats.record(Default::default(), Some(e.to_string()));
                return Err(e);
            }
        }
        let started = std::time::Instant::now();
        let out = match self.dispatch(func, true, None, call).await {
            Ok(Some(out)) => Ok(out),
            Ok(None) => Err(self.unavailable(func)),
            Err(e) => Err(e),
        };
        self.stats.record(
            started.elapsed(),
            out.as_ref().err().map(ToString::to_string),
        );
        out
    }

    /// Like [`run_call`](Self::run_call), but only on the first lane's
    /// live instance: `None` when there is none (nothing to clean up in a
    /// new one). Only for kinds with one lane, whose resources belong to
    /// that instance.
    pub(crate) async fn run_on_live<T, F>(
        &self,
        func: &'static str,
        call: F,
    ) -> Result<Option<T>, CallError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut Instance) -> CallFuture<'a, T> + Send + 'static,
    {
        self.dispatch(func, false, Some(0), call).await
    }

    /// The extension is going away (a reload replaced it, the session
    /// ended): each live instance gets `deactivate` then `dispose`, under
    /// its call deadline and at most `within` in all, and is then dropped.
    /// A lane busy with a call is waited for, within the same bound. An
    /// error or a trap in them is logged, never passed on: the extension
    /// goes either way. Returns how many instances were retired.
    pub async fn retire(&self, within: std::time::Duration) -> usize {
        let mut retired = 0;
        let until = tokio::time::Instant::now() + within;
        for lane in 0..self.core.lanes.len() {
            let id = self.ctx.id.clone();
            let call = self.dispatch("deactivate", false, Some(lane), move |inst| {
                Box::pin(async move {
                    let lifecycle = inst.lifecycle.clone();
                    match lifecycle.call_deactivate(&mut inst.store).await? {
                        Ok(()) => {}
                        Err(e) => tracing::warn!(ext = %id, "deactivate: {}", e.message),
                    }
                    lifecycle.call_dispose(&mut inst.store).await?;
                    Ok(Ok(()))
                })
            });
            match tokio::time::timeout_at(until, call).await {
                Ok(Ok(Some(()))) => retired += 1,
                Ok(Ok(None)) => {}
                Ok(Err(e)) => tracing::warn!(ext = %self.ctx.id, "retiring: {e}"),
                Err(_) => {
                    tracing::warn!(ext = %self.ctx.id, "retiring took longer than {within:?}")
                }
            }
            self.replace_slot(lane);
        }
        retired
    }

    /// `lane`: that lane only, else the first free one.
    async fn dispatch<T, F>(
        &self,
        func: &'static str,
        instantiate: bool,
        lane: Option<usize>,
        call: F,
    ) -> Result<Option<T>, CallError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut Instance) -> CallFuture<'a, T> + Send + 'static,
    {
        let (lane, guard) = self.acquire(lane).await;
        // A fresh, disarmed clock and a fresh flag: the watchdog must not
        // see an older call's deadline or stop (one abandoned on this lane)
        // before this one is armed, which may be after a first link.
        self.core.lanes[lane].set_clock(Arc::default());
        self.core.lanes[lane].set_cancel(call_flag());
        if let Ok(stop) = CALL_STOP.try_with(Clone::clone) {
            stop.bind(self.core.clone(), lane);
        }
        let core = self.core.clone();
        // Runs inline on this task (and thread): no hop. A blocking system
        // call inside it is interrupted by `interrupt`, an async host wait
        // by the watchdog below.
        let call = async move {
            let mut guard = guard;
            if guard.as_ref().is_none_or(|i| i.busy) {
                if !instantiate {
                    return Ok(None);
                }
                *guard = None;
                let linked = core.linked().await?;
                *guard = Some(core.instantiate(lane, &linked).await?);
            }
            let Some(inst) = guard.as_mut() else {
                return Ok(None);
            };
            core.begin(lane, inst, func);
            let outcome = call(inst).await;
            core.finish(&mut guard, func, outcome).map(Some)
        };
        let span = tracing::debug_span!("call", ext = %self.id(), func);
        tracing::Instrument::instrument(self.watch(lane, call, func), span).await
    }

    /// A lane for one call: the first free one (so calls that follow each
    /// other share one instance), else wait for one in turn; or exactly
    /// `only` (cleanup on its live instance).
    async fn acquire(&self, only: Option<usize>) -> (usize, OwnedMutexGuard<Option<Instance>>) {
        if let Some(lane) = only {
            return (lane, self.lock_slot(lane).await);
        }
        for i in 0..self.core.lanes.len() {
            if let Some(guard) = self.core.lanes[i].try_lock() {
                return (i, guard);
            }
        }
        let i = self.core.next_wait.fetch_add(1, Ordering::Relaxed) % self.core.lanes.len();
        (i, self.lock_slot(i).await)
    }

    /// Wait for a call under its watchdog. The epoch check stops guest code
    /// at its deadline or on cancel, but not a call waiting inside the host
    /// (a WASI sleep, a file that never opens); the watchdog does: once the
    /// deadline passed (host waits with their own timeouts pause it) or the
    /// call was cancelled, the call gets [`GIVE_UP_GRACE`] to notice, then
    /// it is abandoned with its instance.
    async fn watch<T>(
        &self,
        lane: usize,
        task: impl Future<Output = Result<Option<T>, CallError>>,
        func: &'static str,
    ) -> Result<Option<T>, CallError> {
        // The caller may drop this future (its turn was abandoned): the
        // call must not go on holding the instance, so it is stopped and
        // the lane moves to a fresh slot.
        let mut abandon = AbandonOnDrop(Some((self, lane)));
        let out = self.watch_inner(lane, task, func).await;
        abandon.0 = None;
        out
    }

    async fn watch_inner<T>(
        &self,
        lane: usize,
        task: impl Future<Output = Result<Option<T>, CallError>>,
        func: &'static str,
    ) -> Result<Option<T>, CallError> {
        let cells = &self.core.lanes[lane];
        let task = Interruptible {
            inner: task,
            lane: cells,
            meter: &self.ctx.meter,
            polls: 0,
        };
        tokio::pin!(task);
        let why = loop {
            let clock = cells.current_clock();
            let cancel = cells.cancel_flag();
            let why = tokio::select! {
                biased;
                done = &mut task => return done,
                _ = clock.overdue() => Interrupted::Deadline,
                _ = cancel.cancelled() => Interrupted::Cancelled,
                // The call may have moved on to a new clock (instantiation,
                // then the call itself).
                _ = tokio::time::sleep(CLOCK_REFRESH) => continue,
            };
            // Until this call arms its own clock and flag, the lane shows
            // the last call's: one stopped before (a deadline, a cancel)
            // is not this call's stop.
            if Arc::ptr_eq(&clock, &cells.current_clock()) && cancel.same(&cells.cancel_flag()) {
                break why;
            }
            // Wait for this call's own (without spinning on the stale one).
            tokio::select! {
                biased;
                done = &mut task => return done,
                _ = tokio::time::sleep(CLOCK_REFRESH) => {}
            }
        };
        let clock = cells.current_clock();
        clock.fire(why);
        self.core.stop_lane(lane);
        if let Ok(done) = tokio::time::timeout(GIVE_UP_GRACE, &mut task).await {
            return done;
        }
        // Still inside the host: leave it there, with its instance.
        clock.disarm();
        self.replace_slot(lane);
        let id = self.ctx.id.clone();
        Err(match why {
            Interrupted::Deadline => CallError::Timeout {
                id,
                func,
                timeout_ms: u64::from(self.ctx.limits.timeout_ms),
            },
            Interrupted::Cancelled => CallError::Cancelled { id, func },
        })
    }

    /// Lock a lane's current slot; if it is replaced while we wait (its
    /// call was abandoned), wait for the new one instead.
    async fn lock_slot(&self, lane: usize) -> OwnedMutexGuard<Option<Instance>> {
        let lane = &self.core.lanes[lane];
        loop {
            let replaced = lane.slot_replaced.notified();
            tokio::pin!(replaced);
            replaced.as_mut().enable();
            let slot = lane.current_slot();
            tokio::select! {
                guard = slot.lock_owned() => return guard,
                _ = replaced => continue,
            }
        }
    }

    /// Start a lane over with an empty slot (the old one may be held
    /// forever by an abandoned call).
    fn replace_slot(&self, lane: usize) {
        let lane = &self.core.lanes[lane];
        *lane.slot.lock().unwrap_or_else(|p| p.into_inner()) = Slot::default();
        lane.slot_replaced.notify_waiters();
    }

    fn unavailable(&self, func: &'static str) -> CallError {
        CallError::Instantiate {
            id: self.ctx.id.clone(),
            message: format!("no instance to run `{func}` on"),
        }
    }
}

impl Lane {
    fn current_slot(&self) -> Slot {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The slot's lock, if no call holds it.
    fn try_lock(&self) -> Option<OwnedMutexGuard<Option<Instance>>> {
        self.current_slot().try_lock_owned().ok()
    }

    fn cancel_flag(&self) -> CancelFlag {
        self.cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn current_clock(&self) -> Arc<DeadlineClock> {
        self.clock.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_clock(&self, clock: Arc<DeadlineClock>) {
        *self.clock.lock().unwrap_or_else(|p| p.into_inner()) = clock;
    }

    fn set_cancel(&self, flag: CancelFlag) {
        *self.cancel.lock().unwrap_or_else(|p| p.into_inner()) = flag;
    }
}

/// A flag for a call starting now: already cancelled if the turn it runs
/// for ([`CallStop`]) was.
fn call_flag() -> CancelFlag {
    let flag = CancelFlag::default();
    if CALL_STOP.try_with(CallStop::is_cancelled).unwrap_or(false) {
        flag.cancel();
    }
    flag
}

impl Core {
    /// Cancel a lane's call in progress and advance the epoch, so a guest
    /// that is computing reaches its epoch check (which sees the flag) at
    /// its next loop iteration or call rather than at the next tick.
    fn stop_lane(&self, lane: usize) {
        if let Some(lane) = self.lanes.get(lane) {
            lane.cancel_flag().cancel();
        }
        self.runtime.engine().increment_epoch();
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.ctx.limits.timeout_ms))
    }

    /// The linked code, linking it on a blocking thread the first time,
    /// or waiting for the link lane that took it on (a thread started
    /// only to wait for that lane cost the start about half a
    /// millisecond of CPU, docs/benchmarks.md).
    async fn linked(self: &Arc<Self>) -> Result<Arc<Linked>, CallError> {
        let ahead = match self.code.get() {
            Some(done) => Some(done.clone()),
            None => self.code.claimed_outcome().await,
        };
        let result = match ahead {
            Some(done) => done,
            None => {
                let core = self.clone();
                let span = tracing::Span::current();
                tokio::task::spawn_blocking(move || {
                    span.in_scope(|| core.code.link_blocking(&core.runtime))
                })
                .await
                .unwrap_or_else(|join| Err(format!("linking panicked: {join}")))
            }
        };
        result.map_err(|message| CallError::Unloadable {
            id: self.ctx.id.clone(),
            message,
        })
    }

    async fn instantiate(&self, lane: usize, linked: &Linked) -> Result<Instance, CallError> {
        let id = self.ctx.id.clone();
        let state = HostState::new(self.ctx.clone()).map_err(|message| CallError::Instantiate {
            id: id.clone(),
            message,
        })?;
        let mut store = Store::new(self.runtime.engine(), state);
        store.limiter(|s| &mut s.limiter);
        // Wall time inside imports, for the meter.
        store.call_hook(|mut ctx, hook| {
            let state = ctx.data_mut();
            match hook {
                wasmtime::CallHook::CallingHost => {
                    state.in_host_since = Some(std::time::Instant::now());
                }
                wasmtime::CallHook::ReturningFromHost => {
                    if let Some(since) = state.in_host_since.take() {
                        state.ext.meter.add_host(since.elapsed().as_nanos() as u64);
                    }
                }
                _ => {}
            }
            Ok(())
        });
        store.epoch_deadline_callback(|mut ctx| {
            Ok(match ctx.data_mut().deadline.check() {
                Some(_) => UpdateDeadline::Interrupt,
                None => UpdateDeadline::Yield(1),
            })
        });
        let generation = self.instantiations.fetch_add(1, Ordering::Relaxed) + 1;
        self.arm(lane, &mut store);
        let span = tracing::debug_span!("instantiate", ext = %id, generation);
        let instance =
            match tracing::Instrument::instrument(linked.pre.instantiate_async(&mut store), span)
                .await
            {
                Ok(i) => i,
                Err(e) => return Err(classify(&id, "instantiate", &store, e)),
            };
        let guest =
            linked
                .indices
                .load(&mut store, &instance)
                .map_err(|e| CallError::Instantiate {
                    id: id.clone(),
                    message: format!("{e:#}"),
                })?;
        let lifecycle =
            linked
                .lifecycle
                .load(&mut store, &instance)
                .map_err(|e| CallError::Instantiate {
                    id: id.clone(),
                    message: format!("{e:#}"),
                })?;
        let config = self.ctx.config.clone();
        let span = tracing::debug_span!("init", ext = %id);
        match tracing::Instrument::instrument(lifecycle.call_init(&mut store, &config), span).await
        {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(guest_error(&id, "init", error)),
            Err(e) => return Err(classify(&id, "init", &store, e)),
        }
        match lifecycle.call_activate(&mut store).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(guest_error(&id, "activate", error)),
            Err(e) => return Err(classify(&id, "activate", &store, e)),
        }
        store.data().deadline.disarm();
        Ok(Instance {
            store,
            guest,
            lifecycle,
            generation,
            busy: false,
        })
    }

    /// Arm the deadline and a fresh cancellation flag for one call (or
    /// instantiation) on `lane`, and show its clock to the watchdog. A
    /// [`CallStop`] cancelled before this reaches the new flag too.
    fn arm(&self, lane: usize, store: &mut Store<HostState>) {
        let flag = call_flag();
        let lane = &self.lanes[lane];
        lane.set_cancel(flag.clone());
        store.data_mut().deadline.arm(self.timeout(), flag);
        store.set_epoch_deadline(1);
        lane.set_clock(store.data().deadline.clock());
    }

    /// Prepare the live instance for a call.
    fn begin(&self, lane: usize, inst: &mut Instance, func: &'static str) {
        self.arm(lane, &mut inst.store);
        inst.store.data_mut().call_id = None;
        inst.store.data_mut().serving = func;
        inst.busy = true;
    }

    /// Turn the outcome of a call into ours; a faulted instance is dropped.
    fn finish<T>(
        &self,
        live: &mut Option<Instance>,
        func: &'static str,
        outcome: wasmtime::Result<Result<T, ExtError>>,
    ) -> Result<T, CallError> {
        match outcome {
            Ok(result) => {
                if let Some(inst) = live.as_mut() {
                    inst.store.data().deadline.disarm();
                    inst.busy = false;
                }
                result.map_err(|e| guest_error(&self.ctx.id, func, e))
            }
            Err(e) => {
                let err = match live.as_ref() {
                    Some(inst) => classify(&self.ctx.id, func, &inst.store, e),
                    None => CallError::Trap {
                        id: self.ctx.id.clone(),
                        func,
                        detail: format!("{e:#}"),
                    },
                };
                *live = None;
                Err(err)
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// A call future that, while it is being polled, is registered with its
    /// thread so a blocking system call in it can be interrupted
    /// (`runtime::interrupt`).
    struct Interruptible<'a, F> {
        #[pin]
        inner: F,
        lane: &'a Lane,
        meter: &'a super::meter::Meter,
        polls: u32,
    }
}

impl<F: Future> Future for Interruptible<'_, F> {
    type Output = F::Output;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let _registered =
            super::interrupt::register(this.lane.clock.clone(), this.lane.cancel.clone());
        // The guest's work and the host code it ran inline, on whichever
        // thread polls it now. A call's first poll (most calls end in it)
        // is timed with the monotonic clock, 20 ns a read; later polls of
        // a call that ran long enough to be suspended use the thread's CPU
        // clock, which a busy machine cannot inflate but costs a system
        // call (350 ns a read here).
        let first = *this.polls == 0;
        *this.polls = this.polls.saturating_add(1);
        if first {
            let started = std::time::Instant::now();
            let out = this.inner.poll(cx);
            this.meter.add_cpu(started.elapsed().as_nanos() as u64);
            out
        } else {
            let before = super::meter::thread_cpu_ns();
            let out = this.inner.poll(cx);
            this.meter
                .add_cpu(super::meter::thread_cpu_ns().saturating_sub(before));
            out
        }
    }
}

/// Stops a call whose caller went away (see [`Extension::watch`]).
struct AbandonOnDrop<'a>(Option<(&'a Extension, usize)>);

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        if let Some((ext, lane)) = self.0 {
            ext.core.lanes[lane]
                .current_clock()
                .fire(Interrupted::Cancelled);
            ext.core.stop_lane(lane);
            ext.replace_slot(lane);
        }
    }
}

/// How often the watchdog looks for the call's current clock.
const CLOCK_REFRESH: Duration = Duration::from_millis(20);

/// What a call answers when the instance is not of the kind its export
/// belongs to (it cannot happen for an instance of this extension).
pub(crate) fn wrong_kind_error(func: &'static str) -> ExtError {
    super::services::ext_error(
        super::services::ErrorClass::ExtensionHost,
        "wrong-kind",
        format!("`{func}` is not an export of this extension's kind"),
    )
}

fn guest_error(id: &ExtensionId, func: &'static str, error: ExtError) -> CallError {
    CallError::Guest {
        id: id.clone(),
        func,
        error: Box::new(error),
    }
}

/// Decide what a failed call means, from the error and the store's notes.
fn classify(
    id: &ExtensionId,
    func: &'static str,
    store: &Store<HostState>,
    e: wasmtime::Error,
) -> CallError {
    let id = id.clone();
    if e.downcast_ref::<MemoryLimitExceeded>().is_some() {
        return CallError::MemoryLimit {
            id,
            func,
            limit_mib: u64::from(store.data().ext.limits.memory_mib),
        };
    }
    match store.data().deadline.fired() {
        Some(Interrupted::Deadline) => {
            return CallError::Timeout {
                id,
                func,
                timeout_ms: u64::from(store.data().ext.limits.timeout_ms),
            };
        }
        Some(Interrupted::Cancelled) => return CallError::Cancelled { id, func },
        None => {}
    }
    let mut detail = match e.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{e:#}"),
    };
    let stderr = store.data().stderr.text();
    if !stderr.is_empty() {
        detail.push_str("; guest stderr: ");
        detail.push_str(&stderr);
    }
    CallError::Trap { id, func, detail }
}

/// The project folder and names a context provider's
/// `[context.when-project-has]` says it reads, when the kernel can look
/// them up: not for a config value the declaration does not describe, nor
/// an unreadable config (as with hooks, it is then always asked; load has
/// validated it, so this is only the safe side), nor without the project
/// grant the provider would read them through (a manifest error, kept
/// here for the same reason).
fn project_files(
    manifest: &Manifest,
    config: &serde_json::Value,
    dirs: &[super::host_state::DirGrant],
) -> Option<(std::path::PathBuf, Vec<String>)> {
    let declared = manifest.context.as_ref()?.when_project_has.as_ref()?;
    if config.is_null() {
        return None;
    }
    let root = dirs
        .iter()
        .find(|d| d.guest == super::host_state::PROJECT_GUEST_DIR)?;
    match declared.reads_with(config) {
        crate::manifest::Reads::Names(names) => Some((root.host.clone(), names)),
        crate::manifest::Reads::Unknown => None,
    }
}

/// Whether anything is under one of `names` in `root`: only a plain "not
/// found" for every name says no (closed world: a lookup that fails
/// otherwise may hide a file the provider could read).
fn any_there(root: &std::path::Path, names: &[String]) -> bool {
    names.iter().any(|name| {
        !matches!(std::fs::symlink_metadata(root.join(name)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    })
}

#[cfg(test)]
mod project_files_tests {
    use super::any_there;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    /// Only "not found" for every name leaves a provider out; a folder, a
    /// dangling link, or a lookup that fails another way (here the root is
    /// a file, so the lookup says "not a directory") counts as there.
    #[test]
    fn only_not_found_everywhere_leaves_a_provider_out() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path();
        assert!(!any_there(root, &names(&["AGENTS.md", "STUD.md"])));
        assert!(!any_there(root, &[]));
        std::fs::write(root.join("STUD.md"), "rules").expect("write");
        assert!(any_there(root, &names(&["AGENTS.md", "STUD.md"])));
        std::fs::create_dir(root.join("RULES.md")).expect("mkdir");
        assert!(any_there(root, &names(&["RULES.md"])));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("gone"), root.join("LINK.md")).expect("link");
            assert!(any_there(root, &names(&["LINK.md"])));
        }
        assert!(any_there(&root.join("STUD.md"), &names(&["AGENTS.md"])));
    }
}
