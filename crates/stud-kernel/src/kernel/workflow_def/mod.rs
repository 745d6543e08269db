//! What a state machine is to the kernel, apart from running it: its
//! stages and completion tools, grant tokens, the saved position, the
//! machine a session recorded, and the errors a workflow can end with.
//! The executor (`workflow`) and the act stages both build on it.

pub mod definition;
pub mod grants;
pub mod position;
pub mod recorded;
pub mod template;

use std::sync::Arc;

pub use definition::{Completion, Workflow};
pub use position::Position;
pub use recorded::Recorded;

use grants::Grants;

#[derive(Clone)]
pub struct Attached {
    pub workflow: Arc<Workflow>,
    pub grants: Arc<Grants>,
}

/// Why a workflow could not be attached or stopped. The `Display` text
/// names the state machine and stage and says what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkflowError {
    #[error("state machine `{sm}` is invalid: {detail}")]
    StageDefinitionInvalid { sm: String, detail: String },
    #[error("state machine `{sm}`: stage `{stage}` has turnCap 0; every stage needs at least 1")]
    StageTurnCapTooLow { sm: String, stage: String },
    #[error(
        "state machine `{sm}`: the completion schema of stage `{stage}` is not a JSON Schema: {detail}"
    )]
    StageCompletionSchemaInvalid {
        sm: String,
        stage: String,
        detail: String,
    },
    #[error("state machine `{sm}` named stage `{stage}`, which it does not declare")]
    StageNotRegistered { sm: String, stage: String },
    #[error(
        "state machine `{sm}` asked for a parallel group of {count} stage(s) after `{after}`; a group needs at least 2 (use sequential for one)"
    )]
    InvalidParallelPlan {
        sm: String,
        after: String,
        count: usize,
    },
    #[error(
        "state machine `{sm}`: join stage `{join}` must be a declared stage that is not one of the siblings"
    )]
    JoinDangling { sm: String, join: String },
    #[error(
        "state machine `{sm}` changed `{key}` in Setup of stage `{stage}`; `{key}` is owned by the kernel (ctx is written only by Setup, and only outside input, results and siblings)"
    )]
    ContextMutationForbidden {
        sm: String,
        stage: String,
        key: String,
    },
    #[error("state machine `{sm}` failed in {phase}: {detail}")]
    Lifecycle {
        sm: String,
        phase: &'static str,
        detail: String,
    },
    #[error("stage `{stage}` failed: {reason}")]
    StageFailed { stage: String, reason: String },
    #[error(
        "stage `{failed}` failed in a parallel group, so its siblings were stopped and the join did not run: {reason}"
    )]
    ParallelSiblingFailure {
        failed: String,
        compound_turn_id: String,
        reason: String,
    },
    #[error("the session's workflow cannot be resumed: {detail}")]
    ResumeMismatch { detail: String },
    #[error(
        "no state machine `{id}` is installed and enabled; `stud ext list` shows what is (kind state-machine)"
    )]
    NotFound { id: String },
}

impl WorkflowError {
    /// The machine-readable code in `turn.end` and the run's result.
    pub fn code(&self) -> &'static str {
        match self {
            WorkflowError::StageDefinitionInvalid { .. } => "stage-definition-invalid",
            WorkflowError::StageTurnCapTooLow { .. } => "stage-turn-cap-too-low",
            WorkflowError::StageCompletionSchemaInvalid { .. } => "stage-completion-schema-invalid",
            WorkflowError::StageNotRegistered { .. } => "stage-not-registered",
            WorkflowError::InvalidParallelPlan { .. } => "invalid-parallel-plan",
            WorkflowError::JoinDangling { .. } => "stage-join-dangling",
            WorkflowError::ContextMutationForbidden { .. } => "context-mutation-forbidden",
            WorkflowError::Lifecycle { .. } => "lifecycle-failure",
            WorkflowError::StageFailed { .. } => "stage-failed",
            WorkflowError::ParallelSiblingFailure { .. } => "parallel-sibling-failure",
            WorkflowError::ResumeMismatch { .. } => "resume-mismatch",
            WorkflowError::NotFound { .. } => "state-machine-not-found",
        }
    }
}
