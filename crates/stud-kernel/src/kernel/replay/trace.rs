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

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
