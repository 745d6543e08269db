//! What a session keeps so that `stud session replay` can re-run it
//! exactly: the inputs as the person gave them, each provider response
//! with the digest of the request it answered, each tool result, each
//! answer a person gave, and the decisions and workflow stages a replay
//! compares against. Kept in the session's log as `trace` records (one per
//! turn); a store keeps them as opaque lines, and an entry of a kind this
//! build does not know is skipped.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::words::{Decision, StageOutcome};

/// One entry. `agent` is the subagent path (`main/reviewer`) for a child
/// session's entries, absent for the main session's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TraceEntry {
    /// A prompt as the person gave it (before RECEIVE_INPUT hooks).
    Input { text: String },
    /// The provider and model the next turns run on (at the first turn and
    /// after a change).
    Model { provider: String, model: String },
    /// The conversation was cleared between turns (`/clear`).
    Cleared,
    /// The limits a start of the session ran under (each start, a resume
    /// too, adds one): a replay runs the next turns under the same.
    Options {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_cost_usd: Option<f64>,
        max_iterations: u32,
        tool_parallelism: u64,
    },
    /// A request, as the digests of its canonical form and of its parts.
    Request {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        sha256: String,
        bytes: u64,
        parts: RequestParts,
    },
    /// The response to the request with digest `request`, folded: its
    /// stream events in the order the kernel took them.
    Response {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        request: String,
        events: Vec<Value>,
    },
    /// A decision of the authority stack (one per layer reached).
    Decision {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        call_id: String,
        tool: String,
        key: String,
        decision: Decision,
        layer: String,
        reason: String,
        /// The security mode that decided (the mode layer's record).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<String>,
        /// When (ms since the epoch): `stud audit --since`.
        #[serde(default)]
        at_ms: u64,
    },
    /// How a tool call that ran ended.
    ToolResult {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        call_id: String,
        tool: String,
        outcome: ToolOutcome,
    },
    /// A question the session asked and how it was answered
    /// (`status`: accepted, rejected, timeout or halted).
    Answer {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        question: Value,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
    /// A workflow stage execution began (the path the workflow takes).
    StageStarted { stage_id: String, attempt: u64 },
    /// A workflow stage execution ended.
    Stage {
        stage_id: String,
        attempt: u64,
        outcome: StageOutcome,
    },
}

/// The SHA-256 of each part of a request's canonical form: a replay whose
/// request differs says which part did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestParts {
    pub system: String,
    pub messages: String,
    pub tools: String,
    pub params: String,
}

impl RequestParts {
    /// The parts that differ between two requests, by name.
    pub fn differing(&self, other: &RequestParts) -> Vec<&'static str> {
        [
            ("system prompt", self.system != other.system),
            ("messages", self.messages != other.messages),
            ("tools", self.tools != other.tools),
            ("model parameters", self.params != other.params),
        ]
        .into_iter()
        .filter_map(|(name, differs)| differs.then_some(name))
        .collect()
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ToolOutcome {
    Ok {
        /// The result's parts (`{"type": "text", "text"}`, images).
        content: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
    },
    Failed {
        class: String,
        code: String,
        message: String,
        detail: String,
    },
    Cancelled,
}

/// Every trace entry a session's stored records hold, in order (records
/// of other types, unknown entry kinds and torn lines skipped).
pub fn entries_of(records: &[String]) -> Vec<TraceEntry> {
    records
        .iter()
        .filter_map(|r| match crate::session_records::SessionRecord::parse(r)? {
            crate::session_records::SessionRecord::Trace { entries } => Some(entries),
            _ => None,
        })
        .flatten()
        .filter_map(|v| TraceEntry::from_value(&v))
        .collect()
}

impl TraceEntry {
    /// The entry a stored value is; `None` for a kind this build does not
    /// know.
    pub fn from_value(v: &Value) -> Option<TraceEntry> {
        serde_json::from_value(v.clone()).ok()
    }

    /// Whose entry it is (`None`: the main session's, or the session's as a
    /// whole).
    pub fn agent(&self) -> Option<&str> {
        match self {
            TraceEntry::Request { agent, .. }
            | TraceEntry::Response { agent, .. }
            | TraceEntry::Decision { agent, .. }
            | TraceEntry::ToolResult { agent, .. }
            | TraceEntry::Answer { agent, .. } => agent.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_round_trip_and_unknown_kinds_are_skipped() {
        let e = TraceEntry::Decision {
            agent: None,
            call_id: "c1".into(),
            tool: "bash".into(),
            key: "ls".into(),
            decision: Decision::Approve,
            layer: "mode".into(),
            reason: "yolo".into(),
            mode: Some("yolo".into()),
            at_ms: 1,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "decision");
        assert!(v.get("agent").is_none(), "{v}");
        assert_eq!(TraceEntry::from_value(&v), Some(e));
        assert_eq!(TraceEntry::from_value(&json!({"kind": "future"})), None);
    }

    #[test]
    fn differing_parts_are_named() {
        let a = RequestParts {
            system: "a".into(),
            ..Default::default()
        };
        let b = RequestParts::default();
        assert_eq!(a.differing(&b), vec!["system prompt"]);
        assert!(a.differing(&a).is_empty());
    }
}
