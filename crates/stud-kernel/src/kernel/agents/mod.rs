//! Subagents: the `task` tool hands a self-contained task to a child
//! session with its own transcript, which can only ever have less than
//! its parent (tools, mode, approvals, budget, depth), runs under the
//! parent's tool call (cancelled with it) and returns its final answer as
//! the call's result. See docs/subagents.md.

mod catalog;
mod child;
mod definition;
mod lineage;
mod run;
mod task_tool;

pub use catalog::{
    AgentCatalog, DEFAULT_BUDGET_SHARE, DEFAULT_CHILD_ITERATIONS, DEFAULT_MAX_DEPTH,
};
pub use definition::{AgentDefinition, AgentSource, DefinitionError};
pub use lineage::{Lineage, MAIN, ParentLink, is_child_id, is_child_of};
pub(crate) use run::{ChildSpend, Delegated};
pub use task_tool::{TASK_TOOL, task_spec};
