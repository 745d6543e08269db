//! Hook slots: transforms, then guards, then observers.
//!
//! Transforms run in order, each on the previous one's output. One that
//! fails (an error, a trap, an answer that is not a JSON object) stops the
//! slot: what it was there to change cannot be known (a redactor removing
//! a secret, say), so nothing goes on without it (fail closed) and the
//! payload goes no further, not to guards, observers or the stage. Guards
//! then judge the final payload, in order, and the first deny stops the
//! slot (a guard that fails or answers nonsense denies: fail closed).
//! Observers get a copy through their own bounded queue and a task per
//! observer, so they see slots in order but never hold up the loop; a full
//! queue drops, and the observer's task reports what was lost when it
//! takes its next event or when its queue closes (at the latest when the
//! session drains it).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::events::Bus;
use super::first_request::FirstRequest;
use crate::extensions::Scope;
use crate::manifest::{ExtensionId, HookKind, HookSlot, Phase, Stage};
use crate::runtime::Extension;
use crate::runtime::domain as wit;
use crate::runtime::domain::HookOutcome;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};
use stud_protocol::events::KernelEvent;

/// Observer queue bound.
pub const OBSERVER_QUEUE: usize = 256;

/// What a slot's transforms made of its payload.
#[derive(Debug)]
pub struct Transformed {
    payload: Value,
    changed: bool,
}

impl Transformed {
    pub fn payload(&self) -> &Value {
        &self.payload
    }

    /// The payload, when a transform changed it.
    pub fn changed(&self) -> Option<Value> {
        self.changed.then(|| self.payload.clone())
    }
}

/// A transform failed, so its slot stopped. What went wrong is in the
/// `hook.failed` record, not here: this text reaches the model (a refused
/// call, a withheld result), and a transform's error may quote the very
/// payload it failed to clean.
#[derive(Debug, Clone, thiserror::Error)]
#[error("transform `{by}` {} at {slot}", refused.as_ref().map_or("failed".to_string(), |r| format!("refused it ({r})")))]
pub struct TransformFailed {
    pub by: ExtensionId,
    pub slot: HookSlot,
    /// The transform's own reason, when it refused on purpose (a command
    /// hook's block) rather than failed.
    pub refused: Option<String>,
}

impl TransformFailed {
    /// The error code of whatever it stopped.
    pub const CODE: &'static str = "hook-transform-failed";
}

/// Why a slot stopped what it brackets.
#[derive(Debug, thiserror::Error)]
pub enum SlotStop {
    /// A guard denied.
    #[error("denied by guard `{by}`: {}", .error.message)]
    Denied { by: ExtensionId, error: ExtError },
    /// A transform failed (see [`TransformFailed`]).
    #[error(transparent)]
    TransformFailed(#[from] TransformFailed),
}

/// What the guards of a slot said, in order: those that allowed, then the
/// one that denied, if any (it stops the rest).
#[derive(Debug, Default)]
pub struct GuardVerdicts {
    pub allowed: Vec<ExtensionId>,
    pub denied: Option<(ExtensionId, ExtError)>,
}

#[derive(Clone)]
struct Observer {
    tx: mpsc::Sender<(HookSlot, Value)>,
    dropped: Arc<AtomicU64>,
}

pub struct HookRunner {
    slots: HashMap<HookSlot, SlotHooks>,
    observers: HashMap<ExtensionId, Observer>,
    tasks: Vec<JoinHandle<()>>,
    bus: Bus,
    first_request: FirstRequest,
}

/// One `ordering.hooks` entry and the settings scope it came from. An
/// entry of the user's global settings names one of their hooks (bundled
/// or global), never a project hook that took the same id: a repository
/// cannot move its own transform into the place the user gave theirs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOrder {
    pub id: String,
    pub from: Scope,
}

impl HookOrder {
    /// The merged `ordering.hooks` (`merged`, global entries first), each
    /// entry tagged with its origin: those in the global file's list
    /// (`global`) are the user's, the rest the project's.
    pub fn of(merged: &[String], global: &[String]) -> Vec<HookOrder> {
        let entry = |from: Scope| {
            move |id: &String| HookOrder {
                id: id.clone(),
                from,
            }
        };
        global
            .iter()
            .map(entry(Scope::Global))
            .chain(
                merged
                    .iter()
                    .filter(|id| !global.contains(id))
                    .map(entry(Scope::Project)),
            )
            .collect()
    }

    /// Whether this entry names `ext`: same id, from a scope at least as
    /// trusted as the entry's.
    fn names(&self, ext: &Extension) -> bool {
        self.id == ext.id().as_str() && ext.scope <= self.from
    }
}

#[derive(Default, Clone)]
struct SlotHooks {
    guards: Vec<Arc<Extension>>,
    transforms: Vec<Arc<Extension>>,
    observers: Vec<ExtensionId>,
}

impl HookRunner {
    /// Attach every hook extension: those named in `order` first, in that
    /// order, then the rest in the order given (discovery order).
    /// Observers start calling their extension once `first_request`
    /// opens (their queues hold what fires before).
    pub fn new(
        hooks: &[Arc<Extension>],
        order: &[HookOrder],
        bus: Bus,
        first_request: &FirstRequest,
    ) -> Self {
        let mut sorted: Vec<&Arc<Extension>> = hooks.iter().collect();
        sorted.sort_by_key(|e| order.iter().position(|o| o.names(e)).unwrap_or(usize::MAX));
        let mut runner = HookRunner {
            slots: HashMap::new(),
            observers: HashMap::new(),
            tasks: Vec::new(),
            bus,
            first_request: first_request.clone(),
        };
        for ext in sorted {
            for reg in ext.hooks() {
                let slot = runner.slots.entry(reg.slot).or_default();
                match reg.kind {
                    HookKind::Guard => slot.guards.push(ext.clone()),
                    HookKind::Transform => slot.transforms.push(ext.clone()),
                    HookKind::Observer => {
                        slot.observers.push(ext.id().clone());
                        if !runner.observers.contains_key(ext.id()) {
                            let observer = runner.spawn_observer(ext.clone());
                            runner.observers.insert(ext.id().clone(), observer);
                        }
                    }
                }
            }
        }
        runner
    }

    /// The same hooks for a child session, its events on `bus`: every
    /// guard and transform applies to the child as to its parent; observer
    /// events go to the parent's observer tasks, which the parent owns.
    pub fn shared(&self, bus: Bus) -> Self {
        HookRunner {
            slots: self.slots.clone(),
            observers: self.observers.clone(),
            tasks: Vec::new(),
            bus,
            first_request: self.first_request.clone(),
        }
    }

    /// An observer's queue and task. What the queue drops is counted by
    /// `observe` and reported by the task, where the report is certain to
    /// come: after each event it takes (a queue that dropped was full, so
    /// one comes), and once more when the queue closes (the session drained
    /// it, or a reload replaced it), so losses at the very end are reported
    /// too.
    fn spawn_observer(&mut self, ext: Arc<Extension>) -> Observer {
        let (tx, mut rx) = mpsc::channel::<(HookSlot, Value)>(OBSERVER_QUEUE);
        let dropped: Arc<AtomicU64> = Arc::default();
        let lost = dropped.clone();
        let bus = self.bus.clone();
        let first_request = self.first_request.clone();
        self.tasks.push(tokio::spawn(async move {
            first_request.wait().await;
            while let Some((slot, payload)) = rx.recv().await {
                let started = Instant::now();
                match ext.hook_run(wit_slot(slot), &payload.to_string()).await {
                    Ok(_) => bus.publish(fired(&ext, slot, HookKind::Observer, started)),
                    Err(e) => bus.publish(KernelEvent::HookFailed {
                        slot: slot.to_string(),
                        kind: "observer".into(),
                        extension: ext.id().to_string(),
                        error: e.to_string(),
                        payload: None,
                    }),
                }
                report_dropped(&bus, &ext, &lost);
            }
            report_dropped(&bus, &ext, &lost);
        }));
        Observer { tx, dropped }
    }

    /// Swap in a new version of an attached hook extension (hot reload).
    /// Its registrations must be the ones attached: changing where a hook
    /// sits mid-session would reorder the slots under a running turn.
    pub fn replace(&mut self, ext: &Arc<Extension>) -> Result<(), String> {
        let id = ext.id();
        let mut attached: Vec<(HookSlot, HookKind)> = Vec::new();
        for (slot, hooks) in &self.slots {
            let of = |v: &Vec<Arc<Extension>>| v.iter().filter(|e| e.id() == id).count();
            attached.extend(std::iter::repeat_n(
                (*slot, HookKind::Guard),
                of(&hooks.guards),
            ));
            attached.extend(std::iter::repeat_n(
                (*slot, HookKind::Transform),
                of(&hooks.transforms),
            ));
            let observers = hooks.observers.iter().filter(|o| *o == id).count();
            attached.extend(std::iter::repeat_n((*slot, HookKind::Observer), observers));
        }
        let mut wanted: Vec<(HookSlot, HookKind)> = ext
            .manifest
            .hooks
            .iter()
            .map(|r| (r.slot, r.kind))
            .collect();
        attached.sort_by_key(|(slot, kind)| (*slot, kind.to_string()));
        wanted.sort_by_key(|(slot, kind)| (*slot, kind.to_string()));
        if attached != wanted {
            return Err(
                "its hook registrations ([[hooks]]) changed; restart stud to attach them".into(),
            );
        }
        for hooks in self.slots.values_mut() {
            for e in hooks.guards.iter_mut().chain(hooks.transforms.iter_mut()) {
                if e.id() == id {
                    *e = ext.clone();
                }
            }
        }
        if self.observers.contains_key(id) {
            // The old task ends once its queue is drained (its sender is
            // dropped here); new events go to the new version.
            let observer = self.spawn_observer(ext.clone());
            self.observers.insert(id.clone(), observer);
        }
        Ok(())
    }

    /// How many (slot, hook) registrations are attached.
    pub fn registrations(&self) -> usize {
        self.slots
            .values()
            .map(|s| s.guards.len() + s.transforms.len() + s.observers.len())
            .sum()
    }

    /// Run the slot: transforms, then guards on the transformed payload,
    /// then observers. `payload` builds the slot's payload; it is not
    /// called when no hook is attached, so an unhooked slot costs nothing.
    /// `Ok(Some(_))` carries the payload a transform produced; `Ok(None)`
    /// means nothing changed (so callers need not convert it back).
    ///
    /// Guards judge what will actually happen: a transform after a guard
    /// could rewrite what the guard allowed.
    pub async fn run(
        &self,
        stage: Stage,
        phase: Phase,
        payload: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, SlotStop> {
        let slot = HookSlot { stage, phase };
        if !self.slots.contains_key(&slot) {
            return Ok(None);
        }
        let transformed = self.transform(slot, payload()).await?;
        let verdicts = self.guard(slot, transformed.payload()).await;
        self.observe_slot(slot, transformed.payload());
        match verdicts.denied {
            Some((by, error)) => Err(SlotStop::Denied { by, error }),
            None => Ok(transformed.changed()),
        }
    }

    /// Whether anything is attached to `slot`.
    pub fn is_hooked(&self, slot: HookSlot) -> bool {
        self.slots.contains_key(&slot)
    }

    /// The slot's transforms in order, each on the previous output. The
    /// first that fails or returns something that is not a JSON object
    /// stops the slot (a `hook.failed` record, payload `withheld`): the
    /// payload goes no further, since what the transform was for cannot
    /// be known.
    pub async fn transform(
        &self,
        slot: HookSlot,
        payload: Value,
    ) -> Result<Transformed, TransformFailed> {
        let mut out = Transformed {
            payload,
            changed: false,
        };
        let Some(hooks) = self.slots.get(&slot) else {
            return Ok(out);
        };
        for transform in &hooks.transforms {
            let started = Instant::now();
            let span = tracing::debug_span!("hook", ext = %transform.id(), slot = %slot, kind = "transform");
            let mut refused = None;
            let failure = match tracing::Instrument::instrument(
                transform.hook_run(wit_slot(slot), &out.payload.to_string()),
                span,
            )
            .await
            {
                Ok(HookOutcome::Transform(text)) => match serde_json::from_str::<Value>(&text) {
                    Ok(next) if next.is_object() => {
                        out.changed |= next != out.payload;
                        out.payload = next;
                        None
                    }
                    _ => Some("its output is not a JSON object".to_string()),
                },
                Ok(HookOutcome::Allow | HookOutcome::Observed) => None,
                // A transform may refuse what it cannot rewrite into
                // something allowed (a command hook's block).
                Ok(HookOutcome::Deny(e)) => {
                    refused = Some(e.message.clone());
                    Some(e.message)
                }
                Err(e) => Some(e.to_string()),
            };
            let Some(error) = failure else {
                self.bus
                    .publish(fired(transform, slot, HookKind::Transform, started));
                continue;
            };
            self.bus.record(KernelEvent::HookFailed {
                slot: slot.to_string(),
                kind: "transform".into(),
                extension: transform.id().to_string(),
                error,
                payload: Some("withheld".into()),
            });
            return Err(TransformFailed {
                by: transform.id().clone(),
                slot,
                refused,
            });
        }
        Ok(out)
    }

    /// The slot's guards in order; the first deny stops (a guard that
    /// fails or answers anything but allow/deny denies: fail closed). Every
    /// verdict comes back, allows included, so the caller can audit each.
    pub async fn guard(&self, slot: HookSlot, payload: &Value) -> GuardVerdicts {
        let mut verdicts = GuardVerdicts::default();
        let Some(hooks) = self.slots.get(&slot) else {
            return verdicts;
        };
        for guard in &hooks.guards {
            let started = Instant::now();
            let span =
                tracing::debug_span!("hook", ext = %guard.id(), slot = %slot, kind = "guard");
            let text = payload.to_string();
            let run = guard.hook_run(wit_slot(slot), &text);
            let verdict = match tracing::Instrument::instrument(run, span).await {
                Ok(HookOutcome::Allow) => None,
                Ok(HookOutcome::Deny(e)) => Some(e),
                Ok(other) => Some(ext_error(
                    ErrorClass::ExtensionHost,
                    "hook-guard-failed",
                    format!(
                        "guard `{}` answered {} instead of allow or deny",
                        guard.id(),
                        outcome_name(&other)
                    ),
                )),
                Err(e) => Some(ext_error(
                    ErrorClass::ExtensionHost,
                    "hook-guard-failed",
                    format!("guard failed, so it denies: {e}"),
                )),
            };
            let Some(error) = verdict else {
                self.bus
                    .publish(fired(guard, slot, HookKind::Guard, started));
                verdicts.allowed.push(guard.id().clone());
                continue;
            };
            self.bus.record(KernelEvent::HookDenied {
                slot: slot.to_string(),
                extension: guard.id().to_string(),
                code: error.code.clone(),
                reason: error.message.clone(),
            });
            verdicts.denied = Some((guard.id().clone(), error));
            break;
        }
        verdicts
    }

    /// Hand the slot's final payload to its observers (never waits).
    pub fn observe_slot(&self, slot: HookSlot, payload: &Value) {
        if let Some(hooks) = self.slots.get(&slot) {
            self.observe(hooks, slot, payload);
        }
    }

    fn observe(&self, hooks: &SlotHooks, slot: HookSlot, payload: &Value) {
        for id in &hooks.observers {
            let Some(o) = self.observers.get(id) else {
                continue;
            };
            // A full queue: counted here, reported by the observer's task
            // (see `spawn_observer`).
            if o.tx.try_send((slot, payload.clone())).is_err() {
                o.dropped.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Let observers finish what is queued.
    pub async fn drain(&mut self) {
        self.observers.clear();
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }
}

/// Report (and reset) what an observer's queue dropped since the last
/// report; a record, so the report itself is never dropped.
fn report_dropped(bus: &Bus, ext: &Extension, dropped: &AtomicU64) {
    let count = dropped.swap(0, Ordering::AcqRel);
    if count > 0 {
        bus.record(KernelEvent::HookObserverDropped {
            extension: ext.id().to_string(),
            count,
        });
    }
}

fn fired(ext: &Extension, slot: HookSlot, kind: HookKind, started: Instant) -> KernelEvent {
    KernelEvent::HookFired {
        slot: slot.to_string(),
        kind: kind.to_string(),
        extension: ext.id().to_string(),
        duration_us: started.elapsed().as_micros() as u64,
    }
}

fn outcome_name(o: &HookOutcome) -> &'static str {
    match o {
        HookOutcome::Allow => "allow",
        HookOutcome::Deny(_) => "deny",
        HookOutcome::Transform(_) => "transform",
        HookOutcome::Observed => "observed",
    }
}

pub fn wit_slot(slot: HookSlot) -> wit::HookSlot {
    let stage = match slot.stage {
        Stage::ReceiveInput => wit::Stage::ReceiveInput,
        Stage::ComposeRequest => wit::Stage::ComposeRequest,
        Stage::SendRequest => wit::Stage::SendRequest,
        Stage::StreamResponse => wit::Stage::StreamResponse,
        Stage::ToolCall => wit::Stage::ToolCall,
        Stage::Render => wit::Stage::Render,
    };
    let phase = match slot.phase {
        Phase::Pre => wit::Phase::Pre,
        Phase::Post => wit::Phase::Post,
    };
    wit::HookSlot { stage, phase }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_global_files_entries_are_the_users_and_the_rest_the_projects() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let order = HookOrder::of(
            &ids(&["protect-paths", "mine", "theirs"]),
            &ids(&["protect-paths", "mine"]),
        );
        let tagged: Vec<(&str, Scope)> = order.iter().map(|o| (o.id.as_str(), o.from)).collect();
        assert_eq!(
            tagged,
            [
                ("protect-paths", Scope::Global),
                ("mine", Scope::Global),
                ("theirs", Scope::Project)
            ]
        );
    }
}
