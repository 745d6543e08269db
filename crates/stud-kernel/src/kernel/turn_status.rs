//! How a turn ended, and what a turn runs: the vocabulary the act stages,
//! workflows, agents and front ends share (kept apart from the turn loop
//! so none of them depends on it).

use crate::runtime::domain::Usage;
use stud_protocol::words::TurnResult;

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
    /// The word events and results carry.
    pub fn result(&self) -> TurnResult {
        match self {
            TurnStatus::Completed => TurnResult::Ok,
            TurnStatus::Failed { .. } => TurnResult::Error,
            TurnStatus::Cancelled => TurnResult::Cancelled,
            TurnStatus::Halted { .. } => TurnResult::Halted,
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.result().as_str()
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
