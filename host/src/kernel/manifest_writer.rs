//! Session manifests are written off the turn's path: the snapshot is
//! taken when the turn ends, and the store writes it while the person reads
//! the answer. Writes of one store run in order (each waits for the one
//! before), and the session's close waits for all of them, so what is
//! written at exit is the newest snapshot. Messages are not written here:
//! each is confirmed by the store before the turn goes on.

use std::sync::{Arc, Mutex};

use stud_protocol::events::KernelEvent;
use tokio::task::JoinHandle;

use super::events::Bus;
use crate::runtime::Extension;

/// The queue of manifest writes to one store, shared by a session and its
/// child sessions.
#[derive(Clone, Default)]
pub struct ManifestWriter {
    last: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl ManifestWriter {
    /// Write `text` as `session_id`'s manifest after the writes queued
    /// before it; a failure is published as `persistence.failed`.
    pub fn write(&self, store: Arc<Extension>, session_id: String, text: String, bus: Bus) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let previous = last.take();
        *last = Some(tokio::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            if let Err(e) = store.store_write_manifest(&session_id, &text).await {
                bus.record(KernelEvent::PersistenceFailed {
                    session_id,
                    error: e.to_string(),
                    store: Some(store.id().to_string()),
                    code: None,
                    indexes: None,
                });
            }
        }));
    }

    /// Wait until every queued write is done (the session closes, or its
    /// manifest is about to be read).
    pub async fn flush(&self) {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(last) = last {
            let _ = last.await;
        }
    }
}
