//! The manifest a session store keeps beside a session's records: what the
//! session is (ids, times, project, mode, provider and model, the
//! extensions it ran with their digests and state slots, usage, its place
//! in a delegation tree, its state machine). The kernel rewrites it at
//! start and after every turn and reads it back to resume; `stud session`
//! lists and shows it. Every field has a default, so a manifest written by
//! an older build still reads; a field of the wrong type is an error.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionManifest {
    pub session_id: String,
    /// The store that wrote it: a resume through another store is refused.
    pub store: String,
    pub created_ms: u64,
    /// Left out of the text compared to see whether anything changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_ms: Option<u64>,
    /// The project the session belongs to: a resume elsewhere is refused.
    pub project_root: String,
    /// The machine and the account that ran it, for listings of a store
    /// several machines share.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub machine: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// The security mode (`ask`, `allowlist`, `yolo`, ...).
    pub security_mode: String,
    pub provider: String,
    pub model: String,
    pub extensions: Vec<RecordedExtension>,
    /// State slots by extension id.
    pub state: BTreeMap<String, Value>,
    /// Tokens as `turn.end` reports them.
    pub usage: Value,
    pub cost_usd: f64,
    pub turns: u64,
    pub messages: u64,
    pub title: String,
    /// The extension set it was started with (the kernel's own shape).
    pub extension_set: Option<Value>,
    /// Where a child session sits in its delegation tree.
    pub agent: Option<AgentPlace>,
    /// The parent's call that started a child session.
    pub parent: Option<ParentCall>,
    /// The state machine it ran.
    pub state_machine: Option<RecordedMachine>,
    /// What each extension called in the session cost
    /// (`stud session show --stats`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metering: Vec<MeteredExtension>,
}

/// One extension's figures over a session (see `runtime::meter`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MeteredExtension {
    pub id: String,
    pub kind: String,
    pub calls: u64,
    pub failures: u64,
    pub cpu_ms: f64,
    pub host_ms: f64,
    pub peak_memory_bytes: u64,
    pub net_bytes_sent: u64,
    pub net_bytes_received: u64,
    /// A provider's tokens (input and output) and their cost.
    pub tokens: u64,
    pub cost_usd: f64,
}

/// One extension a session ran, as it was then.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordedExtension {
    pub id: String,
    pub version: String,
    pub kind: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentPlace {
    /// `main/reviewer`, ...
    pub path: String,
    /// 1 for the main session.
    pub depth: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ParentCall {
    pub session_id: String,
    pub call_id: String,
    pub agent: String,
}

/// A state machine by identity: manifests written before the scope was
/// recorded name only the id and digest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedMachine {
    pub id: String,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
}

/// What a store lists a session by. Only these fields are read, so a
/// damaged field elsewhere does not hide the session from `stud session
/// list` or `-c` (whose resume then names the field).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ManifestSummary {
    pub session_id: String,
    pub project_root: String,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub title: String,
}

impl ManifestSummary {
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

impl SessionManifest {
    /// Read a stored manifest.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// As JSON, keys in order.
    pub fn to_value(&self) -> Value {
        // Strings, numbers and JSON values always serialize.
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_older_manifest_reads_and_a_wrong_field_does_not() {
        let old = json!({"session_id": "s1", "store": "filesystem", "turns": 2, "state_machine": {"id": "sm", "sha256": "ab"}});
        let m = SessionManifest::parse(&old.to_string()).expect("reads");
        assert_eq!((m.session_id.as_str(), m.turns), ("s1", 2));
        assert_eq!(m.state_machine.map(|s| s.scope), Some(None));
        assert!(m.agent.is_none() && m.extensions.is_empty());

        let bad = json!({"session_id": "s1", "turns": "two"}).to_string();
        let err = SessionManifest::parse(&bad).expect_err("a string is not a count");
        assert!(err.to_string().contains("invalid type"), "{err}");
    }

    #[test]
    fn a_summary_reads_past_a_damaged_field() {
        let text = json!({"session_id": "s1", "turns": "two", "updated_ms": 5}).to_string();
        let s = ManifestSummary::parse(&text).expect("reads");
        assert_eq!((s.session_id.as_str(), s.updated_ms), ("s1", 5));
    }

    #[test]
    fn it_writes_what_the_kernel_always_wrote() {
        let m = SessionManifest {
            session_id: "s1".into(),
            ..Default::default()
        };
        let v = m.to_value();
        // None is written as null (not left out), except `updated_ms`.
        assert!(v["agent"].is_null() && v.get("agent").is_some());
        assert!(v.get("updated_ms").is_none());
        assert_eq!(SessionManifest::parse(&v.to_string()).ok(), Some(m));
    }
}
