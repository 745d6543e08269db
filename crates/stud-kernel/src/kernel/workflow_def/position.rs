//! Where a workflow stands: what runs next and the stage context. Written
//! to the session's log at every stage boundary (the state machine's slot)
//! and read back on resume.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stud_protocol::session_records::SessionRecord;

/// What runs next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "execution", rename_all = "kebab-case")]
pub enum Next {
    /// Stages one after another (the last one's `next` decides after).
    Sequential { stages: Vec<String> },
    /// Siblings at once on frozen copies of ctx, then the join.
    Parallel {
        stages: Vec<String>,
        join: Option<String>,
    },
    /// The workflow has ended.
    Done,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Position {
    pub state_machine: String,
    /// The component's sha256 when this was written.
    pub digest: String,
    pub next: Next,
    /// The stage context: `input` (the task), `results` (each finished
    /// stage's completion), plus what Setup wrote.
    pub ctx: Value,
}

impl Position {
    pub fn start(state_machine: &str, digest: &str, entry: &str, input: &str) -> Position {
        Position {
            state_machine: state_machine.to_string(),
            digest: digest.to_string(),
            next: Next::Sequential {
                stages: vec![entry.to_string()],
            },
            ctx: json!({"input": input, "results": {}}),
        }
    }

    pub fn is_done(&self) -> bool {
        self.next == Next::Done
    }

    /// The log record.
    pub fn record(&self) -> String {
        SessionRecord::Workflow {
            position: serde_json::to_value(self).unwrap_or(Value::Null),
        }
        .to_line()
    }

    /// The newest position in a session's log records.
    pub fn latest(records: &[String]) -> Option<Position> {
        records
            .iter()
            .rev()
            .find_map(|r| match SessionRecord::parse(r)? {
                SessionRecord::Workflow { position } => serde_json::from_value(position).ok(),
                _ => None,
            })
    }

    /// Note a finished stage's result in ctx.
    pub fn set_result(ctx: &mut Value, stage: &str, result: Value) {
        if let Some(results) = ctx
            .as_object_mut()
            .map(|m| m.entry("results").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        {
            results.insert(stage.to_string(), result);
        }
    }
}
