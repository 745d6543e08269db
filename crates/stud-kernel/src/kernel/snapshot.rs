//! The session's manifest snapshot and its resume: the snapshot (ids,
//! times, mode, provider and model, the extension set with versions and
//! digests, state slots, usage) is rewritten at start and after each
//! turn, keys sorted; [`Session::adopt`] continues a session read back by
//! [`super::persist::read`].

use serde_json::Value;
use stud_protocol::session_manifest::{
    AgentPlace, ParentCall, RecordedExtension, RecordedMachine, SessionManifest,
};

use super::json_order::sorted;
use super::persist::{Resumed, now_ms};
use super::session::Session;
use stud_protocol::events::KernelEvent;

impl Session {
    /// Rewrite the manifest snapshot (start, end of every turn), when it
    /// changed; the store writes it in the background. A
    /// manifest that would contain a known secret value is not written.
    /// Nor is one for a session with nothing in its store yet: a run that
    /// only looked around (`/help`, `/exit`) must not become the newest
    /// saved session that `-c` and `/resume` offer.
    pub async fn save_manifest(&self) {
        let Some(p) = &self.conversation.log else {
            return;
        };
        if !self.conversation.has_content() {
            return;
        }
        let manifest = SessionManifest {
            session_id: self.id.clone(),
            store: p.store.id().to_string(),
            created_ms: p.created_ms,
            updated_ms: None,
            project_root: p.project_root.clone(),
            machine: super::origin::machine().to_string(),
            user: super::origin::user().to_string(),
            security_mode: self.authority.mode().as_str().into(),
            provider: self.roster.provider_id().to_string(),
            model: self.roster.model.clone(),
            extensions: p
                .loaded
                .iter()
                .map(|e| RecordedExtension {
                    id: e.id().to_string(),
                    version: e.manifest.version.to_string(),
                    kind: e.kind().as_str().into(),
                    sha256: e.digest.to_string(),
                })
                .collect(),
            state: p
                .loaded
                .iter()
                .filter_map(|e| {
                    let v: Value = serde_json::from_str(&e.state()?).ok()?;
                    Some((e.id().to_string(), v))
                })
                .collect(),
            usage: super::usage::usage_json(&self.ledger.usage),
            cost_usd: self.ledger.cost_usd,
            turns: self.ledger.turns,
            messages: self.conversation.messages.len() as u64,
            title: p.title.clone(),
            extension_set: self
                .extension_set
                .as_ref()
                .and_then(|s| serde_json::to_value(s).ok()),
            metering: self.metering.totals(),
            agent: self.lineage.parent.as_ref().map(|_| AgentPlace {
                path: self.lineage.path.clone(),
                depth: self.lineage.depth,
            }),
            parent: self.lineage.parent.as_ref().map(|p| ParentCall {
                session_id: p.session_id.clone(),
                call_id: p.call_id.clone(),
                agent: p.agent.clone(),
            }),
            state_machine: self.workflow.as_ref().map(|w| RecordedMachine {
                id: w.workflow.sm.id().to_string(),
                scope: Some(w.workflow.sm.scope.as_str().into()),
                sha256: Some(w.workflow.sm.digest.to_string()),
            }),
        };
        // Nothing but the time changed: the stored one is still true.
        let unchanged = manifest.to_value().to_string();
        let mut last = p.last_manifest.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() == Some(unchanged.as_str()) {
            return;
        }
        let manifest = SessionManifest {
            updated_ms: Some(now_ms()),
            ..manifest
        };
        let text = sorted(manifest.to_value()).to_string();
        if self.bus.redact(&text) != text {
            self.bus.record(KernelEvent::PersistenceFailed {
                session_id: self.id.clone(),
                error: "the manifest would contain a secret value; it was not written".into(),
                store: None,
                code: Some("secret-leak".into()),
                indexes: None,
            });
            return;
        }
        *last = Some(unchanged);
        drop(last);
        p.manifests
            .write(p.store.clone(), self.id.clone(), text, self.bus.clone());
    }

    /// Wait for the manifest writes in flight (see
    /// [`super::manifest_writer`]).
    pub async fn flush_manifest(&self) {
        if let Some(p) = &self.conversation.log {
            p.manifests.flush().await;
        }
    }

    /// Continue a session read back from its store.
    pub async fn adopt(&mut self, resumed: Resumed) {
        self.id = resumed.session_id;
        self.workflow_position = resumed.position;
        self.conversation.messages = resumed.history;
        self.ledger
            .restore(resumed.usage, resumed.cost_usd, resumed.turns);
        self.metering.resume(resumed.metering);
        if let Some(p) = self.conversation.log.as_mut() {
            p.created_ms = resumed.created_ms;
            p.title = resumed.title;
        }
        let len = self.conversation.messages.len();
        let fixed = resumed.repaired.len();
        if fixed > 0 {
            let indexes: Vec<usize> = (len - fixed..len).collect();
            self.conversation.persist(&self.id, &indexes).await;
        }
        for d in &resumed.drift {
            self.bus.record(KernelEvent::SessionDrift {
                session_id: self.id.clone(),
                message: d.clone(),
            });
        }
        self.bus.record(KernelEvent::SessionResumed {
            session_id: self.id.clone(),
            messages: len as u64,
            repaired_tool_calls: fixed as u64,
            drift: resumed.drift.clone(),
            mode: self.authority.mode().as_str().into(),
        });
    }
}
