//! Subagents: the `task` tool hands a self-contained task to a child
//! session with its own transcript, which can only ever have less than
//! its parent (tools, mode, approvals, budget, depth), runs under the
//! parent's tool call (cancelled with it) and returns its final answer as
//! the call's result. See docs/subagents.md.

mod child;
mod run;

pub use crate::kernel::agent_catalog::{
    AgentCatalog, AgentDefinition, AgentSource, DEFAULT_BUDGET_SHARE, DEFAULT_CHILD_ITERATIONS,
    DEFAULT_MAX_DEPTH, DefinitionError, Lineage, MAIN, ParentLink, TASK_TOOL, is_child_id,
    is_child_of, parent_id, task_spec,
};
