//! How a turn ended, and what a turn runs: the vocabulary the act stages,
//! workflows, agents and front ends share (kept apart from the turn loop
//! so none of them depends on it).

use crate::runtime::bindings::stud::extension::types::Usage;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStatus {
    Completed,
    /// The turn failed; `code` is machine-readable.
    Failed {
        code: String,
        message: String,
    },
    Cancelled,
    /// Headless run needed a person (approval) and nobody could answer.
    Halted {
        tool: String,
        key: String,
    },
}

impl TurnStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnStatus::Completed => "ok",
            TurnStatus::Failed { .. } => "error",
            TurnStatus::Cancelled => "cancelled",
            TurnStatus::Halted { .. } => "halted",
        }
    }
}

/// The workflow stages a turn executes, for `turn.start`.
#[derive(Debug, Clone)]
pub enum TurnStages {
    /// A plain turn.
    None,
    One(String),
    Parallel {
        stages: Vec<String>,
        join: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub turn_id: String,
    pub status: TurnStatus,
    /// The final assistant text (as rendered).
    pub text: String,
    pub iterations: u32,
    pub usage: Usage,
}

pub fn fail(code: &str, message: impl Into<String>) -> TurnStatus {
    TurnStatus::Failed {
        code: code.into(),
        message: message.into(),
    }
}
