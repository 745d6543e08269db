//! What subagents there are and where a session sits among them: the
//! agent definitions (bundled, the user's, the project's), the `task`
//! tool's spec, and a session's lineage. Running a child is `agents`.

mod catalog;
mod definition;
mod lineage;
mod task_tool;

pub use catalog::{
    AgentCatalog, DEFAULT_BUDGET_SHARE, DEFAULT_CHILD_ITERATIONS, DEFAULT_MAX_DEPTH,
};
pub use definition::{AgentDefinition, AgentSource, DefinitionError};
pub use lineage::{Lineage, MAIN, ParentLink, is_child_id, is_child_of, parent_id};
pub use task_tool::{TASK_TOOL, task_spec};
