//! The `task` tool as the model sees it: which agents there are and what
//! to pass them. The kernel runs it (see `run`): it starts sessions, which
//! no component may do, and parallel calls must not wait on one instance.

use serde_json::json;

use super::AgentCatalog;
use crate::runtime::domain::ToolSpec;

pub const TASK_TOOL: &str = "task";

/// The spec for the agents in `catalog`.
pub fn task_spec(catalog: &AgentCatalog) -> ToolSpec {
    let agents: Vec<String> = catalog
        .all()
        .map(|d| format!("- {}: {}", d.name, d.description))
        .collect();
    let description = format!(
        "Hand a self-contained task to a sub-agent: a fresh session with its own context that works on its own and answers with a final report, which becomes this call's result. Use it for independent research or multi-step work that would fill this conversation; several task calls in one response run in parallel. The agent sees nothing of this conversation: put everything it needs in `prompt`.\n\nAgents:\n{}",
        agents.join("\n")
    );
    let parameters = json!({
        "type": "object",
        "properties": {
            "agent": {"type": "string", "enum": catalog.names(), "description": "Which agent does the task."},
            "description": {"type": "string", "description": "A short (3-5 words) label shown to the user."},
            "prompt": {"type": "string", "description": "The whole task, with every fact the agent needs."}
        },
        "required": ["agent", "description", "prompt"],
        "additionalProperties": false
    });
    ToolSpec {
        name: TASK_TOOL.into(),
        description,
        parameters: parameters.to_string(),
        // The call changes nothing itself; every call of the child passes
        // the authority stack on its own.
        read_only: true,
    }
}
