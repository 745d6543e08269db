//! A loaded extension and its live instance. Calls go through one place
//! that arms the deadline, classifies failures and throws a faulted
//! instance away; the next call instantiates a fresh one (from the
//! `InstancePre`) that sees the same state slot.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};
use wasmtime::component::InstancePre;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::Runtime;
use super::bindings::exports::stud::extension as ex;
use super::cache::CodeSource;
use super::cancel::CancelFlag;
use super::error::CallError;
use super::host_state::{DeadlineClock, ExtensionContext, HostState, Interrupted};
use super::inspect::ComponentInfo;
use super::limits::MemoryLimitExceeded;
use super::services::ExtError;
use crate::digest::Sha256Digest;
use crate::manifest::{ExtensionId, Kind, Manifest};

/// How long a call stopped by its watchdog (deadline or cancel) may take
/// to notice before it is abandoned: guest code traps within one epoch
/// tick (10 ms), host waits race the cancel flag.
pub const GIVE_UP_GRACE: Duration = Duration::from_millis(100);

/// Export lookups done once per component.
pub enum KindIndices {
    Provider(ex::provider_api::GuestIndices),
    Tool(ex::tool_api::GuestIndices),
    Hook(ex::hook_api::GuestIndices),
    Ui(ex::ui_api::GuestIndices),
    Logger(ex::logger_api::GuestIndices),
    ContextProvider(ex::context_provider_api::GuestIndices),
    StateMachine(ex::state_machine_api::GuestIndices),
    Command(ex::command_api::GuestIndices),
    SessionStore(ex::session_store_api::GuestIndices),
}

/// The typed exports of one live instance.
#[derive(Clone)]
pub enum KindGuest {
    Provider(ex::provider_api::Guest),
    Tool(ex::tool_api::Guest),
    Hook(ex::hook_api::Guest),
    Ui(ex::ui_api::Guest),
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
            Kind::Ui => Self::Ui(ex::ui_api::GuestIndices::new(pre)?),
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
            Self::Ui(i) => KindGuest::Ui(i.load(store, instance)?),
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
    /// Which instantiation this is; resources from an older one are dead.
    pub(crate) generation: u64,
    /// A call is in progress. Still set at the next call means the previous
    /// call's future was dropped mid-call: the instance cannot be entered
    /// again and is replaced.
    pub(crate) busy: bool,
}

/// A loaded extension, ready to call.
pub struct Extension {
    runtime: Arc<Runtime>,
    pub manifest: Manifest,
    pub digest: Sha256Digest,
    pub code_source: CodeSource,
    pub info: ComponentInfo,
    pub(crate) ctx: Arc<ExtensionContext>,
    pre: InstancePre<HostState>,
    indices: KindIndices,
    lifecycle: ex::lifecycle::GuestIndices,
    live: Mutex<Option<Instance>>,
    cancel: std::sync::Mutex<CancelFlag>,
    instantiations: AtomicU64,
}

impl Extension {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        runtime: Arc<Runtime>,
        manifest: Manifest,
        digest: Sha256Digest,
        code_source: CodeSource,
        info: ComponentInfo,
        ctx: Arc<ExtensionContext>,
        pre: InstancePre<HostState>,
        (indices, lifecycle): (KindIndices, ex::lifecycle::GuestIndices),
    ) -> Self {
        Extension {
            runtime,
            manifest,
            digest,
            code_source,
            info,
            ctx,
            pre,
            indices,
            lifecycle,
            live: Mutex::new(None),
            cancel: std::sync::Mutex::new(CancelFlag::default()),
            instantiations: AtomicU64::new(0),
        }
    }

    pub fn id(&self) -> &ExtensionId {
        &self.ctx.id
    }

    pub fn kind(&self) -> Kind {
        self.ctx.kind
    }

    /// How many times an instance was created (1 + restarts after faults).
    pub fn instantiations(&self) -> u64 {
        self.instantiations.load(Ordering::Relaxed)
    }

    /// The current state slot value.
    pub fn state(&self) -> Option<String> {
        self.ctx.slot.read()
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.ctx.limits.timeout_ms))
    }

    /// Put a saved state slot value back (resume); it must match the
    /// manifest's state schema.
    pub fn restore_state(&self, json: String) -> Result<(), String> {
        self.ctx.slot.write(json)
    }

    /// Stop the call in progress at the next epoch tick.
    pub fn cancel(&self) {
        self.cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cancel();
    }

    /// Create the instance now (and run `init`), if there is none.
    pub async fn start(&self) -> Result<(), CallError> {
        self.ready().await.map(|_| ())
    }

    /// Throw the live instance away and start a fresh one (same state slot).
    pub async fn restart(&self) -> Result<(), CallError> {
        let mut live = self.live.lock().await;
        *live = None;
        *live = Some(self.instantiate().await?);
        Ok(())
    }

    /// Lock the live instance, creating it if needed.
    pub(crate) async fn ready(&self) -> Result<MutexGuard<'_, Option<Instance>>, CallError> {
        let mut live = self.live.lock().await;
        if live.as_ref().is_none_or(|i| i.busy) {
            *live = None;
            *live = Some(self.instantiate().await?);
        }
        Ok(live)
    }

    async fn instantiate(&self) -> Result<Instance, CallError> {
        let id = self.ctx.id.clone();
        let state = HostState::new(self.ctx.clone()).map_err(|message| CallError::Instantiate {
            id: id.clone(),
            message,
        })?;
        let mut store = Store::new(self.runtime.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_callback(|mut ctx| {
            Ok(match ctx.data_mut().deadline.check() {
                Some(_) => UpdateDeadline::Interrupt,
                None => UpdateDeadline::Yield(1),
            })
        });
        let generation = self.instantiations.fetch_add(1, Ordering::Relaxed) + 1;
        let clock = self.arm(&mut store);
        let instance = match self
            .watched(clock.clone(), self.pre.instantiate_async(&mut store))
            .await
        {
            Ok(i) => i,
            Err(e) => return Err(classify(&id, "instantiate", &store, e)),
        };
        let guest =
            self.indices
                .load(&mut store, &instance)
                .map_err(|e| CallError::Instantiate {
                    id: id.clone(),
                    message: format!("{e:#}"),
                })?;
        let lifecycle =
            self.lifecycle
                .load(&mut store, &instance)
                .map_err(|e| CallError::Instantiate {
                    id: id.clone(),
                    message: format!("{e:#}"),
                })?;
        let config = self.ctx.config.clone();
        match self
            .watched(clock.clone(), lifecycle.call_init(&mut store, &config))
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(guest_error(&id, "init", error)),
            Err(e) => return Err(classify(&id, "init", &store, e)),
        }
        match self
            .watched(clock, lifecycle.call_activate(&mut store))
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(guest_error(&id, "activate", error)),
            Err(e) => return Err(classify(&id, "activate", &store, e)),
        }
        store.data_mut().deadline.disarm();
        Ok(Instance {
            store,
            guest,
            generation,
            busy: false,
        })
    }

    /// Arm the deadline and a fresh cancellation flag for one call; the
    /// clock its watchdog watches.
    fn arm(&self, store: &mut Store<HostState>) -> Arc<DeadlineClock> {
        let flag = CancelFlag::default();
        *self.cancel.lock().unwrap_or_else(|p| p.into_inner()) = flag.clone();
        store.data_mut().deadline.arm(self.timeout(), flag);
        store.set_epoch_deadline(1);
        store.data().deadline.clock()
    }

    /// Await `call` (one export call on this extension's store) under a
    /// watchdog. The epoch check stops guest code at its deadline or on
    /// cancel, but not a call waiting inside the host (a WASI sleep, a
    /// file that never opens); the watchdog does: once the deadline passed
    /// (host waits with their own timeouts paused) or the call was
    /// cancelled, the call gets [`GIVE_UP_GRACE`] to notice, then it is
    /// abandoned. An abandoned or interrupted call is an error and its
    /// instance is thrown away (by [`finish`](Self::finish)).
    pub(crate) async fn watched<T>(
        &self,
        clock: Arc<DeadlineClock>,
        call: impl Future<Output = wasmtime::Result<T>>,
    ) -> wasmtime::Result<T> {
        let cancel = self
            .cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        tokio::pin!(call);
        let why = tokio::select! {
            biased;
            out = &mut call => return out,
            _ = clock.overdue() => Interrupted::Deadline,
            _ = cancel.cancelled() => Interrupted::Cancelled,
        };
        clock.fire(why);
        // Guest code traps at the next epoch tick; host waits race this.
        cancel.cancel();
        match tokio::time::timeout(GIVE_UP_GRACE, &mut call).await {
            Ok(out) => out,
            Err(_) => Err(wasmtime::Error::msg(
                "abandoned: still inside a host call past its deadline",
            )),
        }
    }

    /// Lock the live instance without creating one.
    pub(crate) async fn live_guard(&self) -> MutexGuard<'_, Option<Instance>> {
        self.live.lock().await
    }

    /// Prepare the live instance for a call: returns its exports.
    pub(crate) fn begin(
        &self,
        live: &mut Option<Instance>,
        func: &'static str,
    ) -> Result<(KindGuest, Arc<DeadlineClock>), CallError> {
        let inst = live.as_mut().ok_or_else(|| CallError::Instantiate {
            id: self.ctx.id.clone(),
            message: "no live instance".into(),
        })?;
        let clock = self.arm(&mut inst.store);
        inst.store.data_mut().call_id = None;
        inst.store.data_mut().serving = func;
        inst.busy = true;
        Ok((inst.guest.clone(), clock))
    }

    /// Turn the outcome of a call into ours; a faulted instance is dropped.
    pub(crate) fn finish<T>(
        &self,
        live: &mut Option<Instance>,
        func: &'static str,
        outcome: wasmtime::Result<Result<T, ExtError>>,
    ) -> Result<T, CallError> {
        match outcome {
            Ok(result) => {
                if let Some(inst) = live.as_mut() {
                    inst.store.data_mut().deadline.disarm();
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

    pub(crate) fn wrong_kind(&self, func: &'static str) -> CallError {
        CallError::Instantiate {
            id: self.ctx.id.clone(),
            message: format!("`{func}` is not an export of a {} extension", self.ctx.kind),
        }
    }
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
