//! The records a session store keeps for a session, one JSON line each, in
//! order. The kernel writes them and reads them back to resume; a store
//! keeps them as opaque lines. A record of a type this build does not know
//! (written by a newer one) is skipped, not an error.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SessionRecord {
    /// One message of the conversation (`{"role", "content": [parts]}`).
    Message { message: Value },
    /// The whole history as compaction left it: a resume starts from it
    /// instead of compacting the same turns again.
    Compaction {
        #[serde(default)]
        tier: u8,
        /// What was removed, in words.
        #[serde(default)]
        removed: String,
        history: Vec<Value>,
    },
    /// A workflow's position, saved at every stage boundary.
    Workflow { position: Value },
    /// What a replay needs of one turn
    /// ([`TraceEntry`](crate::replay_trace::TraceEntry) values, in order).
    Trace { entries: Vec<Value> },
}

impl SessionRecord {
    /// The line the store keeps.
    pub fn to_line(&self) -> String {
        // Strings, numbers and JSON values always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored line; `None` for a line that is not a record this build
    /// knows (a newer record type, a torn line).
    pub fn parse(line: &str) -> Option<Self> {
        serde_json::from_str(line).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_are_tagged_lines_and_unknown_ones_are_skipped() {
        let m = SessionRecord::Message {
            message: json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
        };
        let line = m.to_line();
        assert!(line.starts_with(r#"{"type":"message""#), "{line}");
        assert_eq!(SessionRecord::parse(&line), Some(m));
        let c = SessionRecord::parse(r#"{"type":"compaction","history":[]}"#);
        assert_eq!(
            c,
            Some(SessionRecord::Compaction {
                tier: 0,
                removed: String::new(),
                history: vec![]
            })
        );
        assert_eq!(
            SessionRecord::parse(r#"{"type":"checkpoint","at":1}"#),
            None
        );
        assert_eq!(SessionRecord::parse(r#"{"type":"message""#), None);
    }
}
