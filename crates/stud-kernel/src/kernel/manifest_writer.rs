//! Session manifests are written off the turn's path: the snapshot is
//! taken when the turn ends, and the store writes it while the person reads
//! the answer. Messages are not written here: each is confirmed by the
//! store before the turn acts on it or reads what answers it
//! (`Conversation::settle`).
//!
//! A manifest is a snapshot, so only the newest one matters. A session's
//! first snapshot is written at once (it is what makes the session show in
//! `stud session list` and resumable after a crash), except that a `task`
//! child's, which shares its parent's writer, goes with the parent's
//! snapshot when one is already waiting (within [`SETTLE`]); a later one waits
//! [`SETTLE`] for a newer one to replace it. Turns that follow one another
//! without a pause (a headless run, a workflow's stages) then rewrite the
//! manifest once per [`SETTLE`] rather than once per turn: the rewrite (a
//! file written and renamed over the old one) cost more than the rest of
//! such a turn. Writes run in order, one at a time, and [`flush`] writes
//! what is waiting at once, so the session's close leaves the newest
//! snapshot on disk.
//!
//! [`flush`]: ManifestWriter::flush

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stud_protocol::events::KernelEvent;
use tokio::sync::Mutex as AsyncMutex;

use super::events::Bus;
use crate::runtime::Extension;

/// How long a snapshot waits for a newer one. A crash loses at most this
/// much of the snapshot's history (never a message: those are in the log).
pub const SETTLE: Duration = Duration::from_millis(25);

/// The queue of manifest writes, shared by a session and its child
/// sessions.
#[derive(Clone, Default)]
pub struct ManifestWriter {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// [`SETTLE`] unless set ([`ManifestWriter::settling`]).
    settle: Option<Duration>,
    queue: Mutex<Queue>,
    /// Held while a batch is taken and written: writes happen in the
    /// order their snapshots were taken.
    writing: AsyncMutex<()>,
}

#[derive(Default)]
struct Queue {
    /// The newest snapshot not yet written, by session id.
    pending: BTreeMap<String, Pending>,
    /// Sessions with a snapshot written (or being written) by this writer.
    seen: BTreeSet<String>,
    /// A task is waiting to write `pending`.
    scheduled: bool,
}

struct Pending {
    store: Arc<Extension>,
    text: String,
    bus: Bus,
}

impl ManifestWriter {
    /// A writer whose later snapshots wait `settle` rather than [`SETTLE`].
    pub fn settling(settle: Duration) -> Self {
        ManifestWriter {
            inner: Arc::new(Inner {
                settle: Some(settle),
                ..Default::default()
            }),
        }
    }

    /// Queue `text` as `session_id`'s manifest, replacing a snapshot of the
    /// same session not written yet; a failure is published as
    /// `persistence.failed`.
    pub fn write(&self, store: Arc<Extension>, session_id: String, text: String, bus: Bus) {
        let mut queue = self.inner.lock();
        let first = queue.seen.insert(session_id.clone());
        queue
            .pending
            .insert(session_id, Pending { store, text, bus });
        if queue.scheduled {
            return;
        }
        queue.scheduled = true;
        drop(queue);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            if !first {
                tokio::time::sleep(inner.settle.unwrap_or(SETTLE)).await;
            }
            let _writing = inner.writing.lock().await;
            // Taken together with clearing `scheduled`: a snapshot queued
            // after this schedules a task of its own.
            let batch = {
                let mut queue = inner.lock();
                queue.scheduled = false;
                std::mem::take(&mut queue.pending)
            };
            write_all(batch).await;
        });
    }

    /// Write every queued snapshot now, after the write in progress (the
    /// session closes, or its manifest is about to be read).
    pub async fn flush(&self) {
        let _writing = self.inner.writing.lock().await;
        let batch = std::mem::take(&mut self.inner.lock().pending);
        write_all(batch).await;
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn write_all(batch: BTreeMap<String, Pending>) {
    for (session_id, p) in batch {
        if let Err(e) = p.store.store_write_manifest(&session_id, &p.text).await {
            p.bus.record(KernelEvent::PersistenceFailed {
                session_id,
                error: e.to_string(),
                store: Some(p.store.id().to_string()),
                code: None,
                indexes: None,
            });
        }
    }
}
