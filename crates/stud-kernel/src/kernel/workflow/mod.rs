//! The state-machine executor: stage executions through their seven
//! phases (Setup, Init, CheckGate, Act, Assert, Exit, Next), retries,
//! sequential and parallel transitions, grant tokens, and the position
//! persisted at every stage boundary so a session resumes where it
//! stopped.

pub mod attach;
pub mod execution;
pub mod run;

pub use crate::kernel::workflow_def::{
    Attached, Workflow, WorkflowError, definition, grants, position, template,
};
pub use position::Position;
