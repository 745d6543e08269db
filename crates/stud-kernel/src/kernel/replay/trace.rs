//! The recorder: every session collects its trace entries here (children
//! and workflow stages share it through the bus), and the main session
//! writes them to its log as one `trace` record when a turn ends.

use std::sync::Mutex;

use stud_protocol::events::KernelEvent;
use stud_protocol::replay_trace::TraceEntry;

#[derive(Default)]
pub struct Trace {
    entries: Mutex<Vec<TraceEntry>>,
    /// The provider and model last recorded (a `model` entry is written
    /// only when they change).
    model: Mutex<Option<(String, String)>>,
}

impl Trace {
    pub fn push(&self, entry: TraceEntry) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(entry);
    }

    /// Everything collected since the last take.
    pub fn take(&self) -> Vec<TraceEntry> {
        std::mem::take(&mut *self.entries.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A `model` entry, when `provider`/`model` differ from the last one.
    pub fn model(&self, provider: &str, model: &str) {
        let mut last = self.model.lock().unwrap_or_else(|p| p.into_inner());
        let now = (provider.to_string(), model.to_string());
        if last.as_ref() != Some(&now) {
            *last = Some(now);
            drop(last);
            self.push(TraceEntry::Model {
                provider: provider.into(),
                model: model.into(),
            });
        }
    }

    /// The entry an authoritative event makes, if any: the authority
    /// stack's decisions and the workflow's stages are compared by a replay.
    pub fn observe(&self, agent: Option<&str>, event: &KernelEvent) {
        let entry = match event {
            KernelEvent::ApprovalDecided {
                call_id,
                tool,
                key,
                decision,
                layer,
                reason,
                mode,
                ..
            } => TraceEntry::Decision {
                agent: agent.map(str::to_string),
                call_id: call_id.clone(),
                tool: tool.clone(),
                key: key.clone(),
                decision: *decision,
                layer: layer.clone(),
                reason: reason.clone(),
                mode: mode.clone(),
                at_ms: now_ms(),
            },
            KernelEvent::WorkflowStageEnded {
                stage_id,
                attempt,
                outcome,
                ..
            } => TraceEntry::Stage {
                stage_id: stage_id.clone(),
                attempt: *attempt,
                outcome: *outcome,
            },
            _ => return,
        };
        self.push(entry);
    }
}

/// The `trace` record of `entries`, secret values cut from every string
/// before it is serialized (as events are: a value JSON would escape
/// cannot slip past a cut made on the text).
/// `redact` cuts them from one value (the session's redactor: the bus's
/// [`redact_value`](crate::kernel::events::Bus::redact_value)).
pub fn record(entries: &[TraceEntry], redact: impl Fn(&mut serde_json::Value)) -> String {
    let entries = entries
        .iter()
        .filter_map(|e| serde_json::to_value(e).ok())
        .map(|mut v| {
            redact(&mut v);
            v
        })
        .collect();
    stud_protocol::session_records::SessionRecord::Trace { entries }.to_line()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::redact::Redactor;

    #[test]
    fn a_secret_is_cut_from_the_record_even_where_json_escapes_it() {
        let secret = "sk-\"quoted\\key-0123456789";
        let redactor = Redactor::new(vec![secret.to_string()]);
        let entries = vec![TraceEntry::Input {
            text: format!("my key is {secret}"),
        }];
        let line = record(&entries, |v| redactor.value(v));
        let escaped = serde_json::to_string(secret).unwrap();
        assert!(!line.contains(escaped.trim_matches('"')), "{line}");
        assert!(!line.contains("0123456789"), "{line}");
        // Cut on the text alone, the escaped form stays.
        let plain = redactor.text(
            &stud_protocol::session_records::SessionRecord::Trace {
                entries: vec![serde_json::to_value(&entries[0]).unwrap()],
            }
            .to_line(),
        );
        assert!(
            plain.contains("0123456789"),
            "the test would not see the difference"
        );
    }
}
