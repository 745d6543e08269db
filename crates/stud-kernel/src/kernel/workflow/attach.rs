//! Attaching a state machine to a session: chosen by `--sm`,
//! `active.stateMachine` (global settings) or `/workflow` at the prompt,
//! or the one a resumed session ran. A resumed session continues from its
//! saved position, which must exist and fit the machine.
//!
//! A state machine's stage envelopes approve tools, so the one a resumed
//! session ran is found by what its manifest records, (scope, id, digest),
//! not by its id alone: a project that brought its own machine under that
//! id, or other code under it, is refused with what to do (`--sm ID` takes
//! what is loaded knowingly).

use std::sync::Arc;

use serde_json::json;

use crate::kernel::session::Session;
use crate::kernel::workflow_def::position::Next;
use crate::kernel::workflow_def::{Attached, Recorded, Workflow, WorkflowError};
use stud_protocol::events::KernelEvent;

impl Session {
    /// `/workflow ID` at the prompt: attach a state machine from the next
    /// input on (the workflow starts at its entry stage).
    pub async fn attach_state_machine(&mut self, id: &str) -> Result<(), WorkflowError> {
        attach(self, Some(id), None).await
    }

    pub fn state_machine(&self) -> Option<String> {
        self.workflow
            .as_ref()
            .map(|w| w.workflow.sm.id().to_string())
    }
}

/// `recorded`: for a resumed session, the state machine it ran (`None`
/// inside: none). Nothing wanted and nothing recorded attaches nothing.
/// With nothing wanted, the recorded machine must be the one loaded now
/// ([`Recorded::is`]); a `wanted` one (typed for this run) is taken as
/// loaded.
pub async fn attach(
    session: &mut Session,
    wanted: Option<&str>,
    recorded: Option<Option<Recorded>>,
) -> Result<(), WorkflowError> {
    let mismatch = |detail: String| WorkflowError::ResumeMismatch { detail };
    let record = recorded.flatten();
    let resumed_with = record.as_ref().map(|r| r.id.clone());
    let id = match (wanted, &resumed_with) {
        (Some(w), Some(r)) if w != r => {
            return Err(mismatch(format!(
                "it ran state machine `{r}` and this run asks for `{w}`; resume without --sm, or start a new session"
            )));
        }
        (Some(w), _) => w.to_string(),
        (None, Some(r)) => r.clone(),
        (None, None) => return Ok(()),
    };
    let Some(sm) = session
        .roster
        .state_machines
        .iter()
        .find(|e| e.id().as_str() == id)
        .cloned()
    else {
        return Err(match resumed_with {
            Some(_) => mismatch(format!(
                "it ran state machine `{id}`, which is not installed and enabled now"
            )),
            None => WorkflowError::NotFound { id },
        });
    };
    if let (None, Some(record)) = (wanted, &record) {
        record.is(&sm)?;
    }
    let position = if resumed_with.is_some() {
        let Some(p) = session.workflow_position.clone() else {
            return Err(mismatch(format!(
                "it ran state machine `{id}` but its log holds no saved position (the slot is missing)"
            )));
        };
        Some(p)
    } else {
        // A plain session that now gets a workflow starts at its entry.
        session.workflow_position = None;
        None
    };
    let workflow = Workflow::load(sm.clone()).await?;
    if let Some(p) = &position {
        let stages: Vec<&String> = match &p.next {
            Next::Sequential { stages } => stages.iter().collect(),
            Next::Parallel { stages, join } => stages.iter().chain(join).collect(),
            Next::Done => Vec::new(),
        };
        if p.state_machine != id {
            return Err(mismatch(format!(
                "its saved position belongs to `{}`, not `{id}`",
                p.state_machine
            )));
        }
        if let Some(missing) = stages.iter().find(|s| !workflow.stages.contains_key(**s)) {
            return Err(mismatch(format!(
                "it stopped before stage `{missing}`, which `{id}` no longer declares"
            )));
        }
    }
    session.bus.record(KernelEvent::WorkflowAttached {
        state_machine: id.to_string(),
        sha256: sm.digest.to_string(),
        entry: workflow.entry.clone(),
        stages: workflow.stages.keys().cloned().collect(),
        resumed_at: position.as_ref().map(|p| json!(p.next)),
    });
    session.workflow = Some(Attached {
        workflow: Arc::new(workflow),
        grants: Arc::default(),
    });
    Ok(())
}
