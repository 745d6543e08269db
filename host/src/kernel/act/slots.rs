//! The hook slots around each stage, and the `stage.pre`/`stage.post`
//! events that bracket it.

use serde_json::{Value, json};

use stud_protocol::events::EventKind;

use crate::kernel::hooks::SlotOutcome;
use crate::kernel::session::Session;
use crate::kernel::turn::{TurnStatus, fail};
use crate::manifest::{Phase, Stage};

impl Session {
    pub(crate) fn stage_event(&self, stage: Stage, phase: Phase, extra: Value) {
        let kind = if phase == Phase::Pre {
            EventKind::StagePre
        } else {
            EventKind::StagePost
        };
        let mut payload = json!({"stage": stage.to_string()});
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        self.bus.publish(kind, payload);
    }

    /// Run a pre slot; a deny ends the turn with a clear error. `Some` is
    /// a payload a transform rewrote.
    pub(crate) async fn pre(
        &self,
        stage: Stage,
        payload: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, TurnStatus> {
        self.stage_event(stage, Phase::Pre, json!({}));
        match self.hooks.run(stage, Phase::Pre, payload).await {
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
        let out = match self.hooks.run(stage, Phase::Post, payload).await {
            SlotOutcome::Continue(p) => p,
            // Guards cannot attach to post slots (validated at load).
            SlotOutcome::Denied { .. } => None,
        };
        self.stage_event(stage, Phase::Post, json!({}));
        out
    }
}
