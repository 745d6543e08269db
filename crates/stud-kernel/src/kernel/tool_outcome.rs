//! How a tool call ended, shared by the act stages that run calls and the
//! subagents that a `task` call delegates to.

use crate::kernel::turn_status::TurnStatus;
use crate::runtime::domain::ToolOutput;

/// How a call ended.
pub enum Ran {
    Cancelled,
    Ok(ToolOutput),
    Failed {
        class: String,
        code: String,
        /// For the model (the tool's own words).
        message: String,
        /// For the event (names who failed).
        detail: String,
    },
}

/// How a `task` call ended.
pub enum Delegated {
    Ran(Ran),
    /// The child needed a person and the run is headless: the parent's
    /// turn halts too (exit 3), as if it had asked itself.
    Halted(TurnStatus),
}
