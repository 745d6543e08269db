//! The hook slots around each stage, and the `stage.pre`/`stage.post`
//! events that bracket it.

use serde_json::Value;

use stud_protocol::events::KernelEvent;

use crate::kernel::hooks::SlotOutcome;
use crate::kernel::session::Session;
use crate::kernel::turn::{TurnStatus, fail};
use crate::manifest::{Phase, Stage};

impl Session {
    pub(crate) fn stage_event(&self, stage: Stage, phase: Phase) {
        let stage = stage.to_string();
        self.bus.publish(if phase == Phase::Pre {
            KernelEvent::StagePre { stage, calls: None }
        } else {
            KernelEvent::StagePost {
                stage,
                halted: false,
            }
        });
    }

    /// Run a pre slot; a deny ends the turn with a clear error. `Some` is
    /// a payload a transform rewrote.
    pub(crate) async fn pre(
        &self,
        stage: Stage,
        payload: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, TurnStatus> {
        self.stage_event(stage, Phase::Pre);
        match self.roster.hooks.run(stage, Phase::Pre, payload).await {
            SlotOutcome::Continue(p) => Ok(p),
            SlotOutcome::Denied { by, error } => Err(fail(
                "hook-denied",
                format!("{stage} was denied by guard `{by}`: {}", error.message),
            )),
        }
    }

    /// Run a post slot; `Some` is a payload a transform rewrote.
    pub(crate) async fn post(
        &self,
        stage: Stage,
        payload: impl FnOnce() -> Value,
    ) -> Option<Value> {
        let out = match self.roster.hooks.run(stage, Phase::Post, payload).await {
            SlotOutcome::Continue(p) => p,
            // Guards cannot attach to post slots (validated at load).
            SlotOutcome::Denied { .. } => None,
        };
        self.stage_event(stage, Phase::Post);
        out
    }
}
