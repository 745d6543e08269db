//! The hook slots around each stage, and the `stage.pre`/`stage.post`
//! events that bracket it.

use crate::kernel::act::ActParts;
use serde_json::Value;

use stud_protocol::events::KernelEvent;

use crate::kernel::hooks::{SlotStop, TransformFailed};
use crate::kernel::turn_status::{TurnStatus, fail};
use crate::manifest::{Phase, Stage};

impl ActParts<'_> {
    pub(crate) fn stage_event(&self, stage: Stage, phase: Phase) {
        self.bus.publish(if phase == Phase::Pre {
            KernelEvent::StagePre { stage, calls: None }
        } else {
            KernelEvent::StagePost {
                stage,
                halted: false,
            }
        });
    }

    /// Run a pre slot; a deny or a failed transform ends the turn with a
    /// clear error. `Some` is a payload a transform rewrote.
    pub(crate) async fn pre(
        &self,
        stage: Stage,
        payload: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, TurnStatus> {
        self.stage_event(stage, Phase::Pre);
        self.roster
            .hooks
            .run(stage, Phase::Pre, payload)
            .await
            .map_err(|stop| slot_stopped(stage, stop))
    }

    /// Run a post slot; `Some` is a payload a transform rewrote. A failed
    /// transform ends the turn: what the stage produced goes no further.
    pub(crate) async fn post(
        &self,
        stage: Stage,
        payload: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, TurnStatus> {
        let out = self
            .roster
            .hooks
            .run(stage, Phase::Post, payload)
            .await
            .map_err(|stop| slot_stopped(stage, stop))?;
        self.stage_event(stage, Phase::Post);
        Ok(out)
    }
}

/// The turn's end when a slot stopped it. Guards cannot attach to post
/// slots (validated at load), so a post slot only stops for a transform.
fn slot_stopped(stage: Stage, stop: SlotStop) -> TurnStatus {
    match stop {
        SlotStop::Denied { by, error } => fail(
            "hook-denied",
            format!("{stage} was denied by guard `{by}`: {}", error.message),
        ),
        SlotStop::TransformFailed(failed) => transform_failed(&failed),
    }
}

/// A failed transform ends the turn, naming it and what to do.
fn transform_failed(failed: &TransformFailed) -> TurnStatus {
    fail(
        TransformFailed::CODE,
        format!(
            "{failed}, so the turn stopped there: a transform may be there to remove something (a secret, say), so nothing goes on without it. Its `hook.failed` event says what went wrong; fix the extension `{}` or disable it",
            failed.by
        ),
    )
}
