//! The conversation: the messages a session sends the model, and their
//! log in the session store. Every appended message is a log record,
//! reported persisted only once the store confirmed it; known secret
//! values are cut out first, so a key a tool printed or the person
//! pasted never reaches the model's context or a session file.
//!
//! A message the next request carries (the person's input, tool results)
//! is written *ahead*: the store writes it while the request is composed
//! and sent, and the turn waits for it ([`Conversation::settle`]) before
//! it reads the answer. So nothing the model answers, no tool it calls
//! and no UI hand-off happens before the messages they follow are in the
//! log, and the write (an fsync on a disk) is not on the request's path.

use super::events::Bus;
use super::payloads::message_appended;
use super::persist::{Persistence, message_record};
use crate::runtime::domain::{ContentPart, Message, ResultPart, Role};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use stud_protocol::events::KernelEvent;
use tokio::task::JoinHandle;

use crate::runtime::Extension;

pub struct Conversation {
    pub(crate) messages: Vec<Message>,
    /// The link to the session store, once attached.
    pub(crate) log: Option<Persistence>,
    pub(crate) bus: Bus,
    /// Provider tokens per estimated token (calibrated from usage).
    pub(crate) token_ratio: f64,
    /// The write ahead not yet confirmed (at most one: the next write
    /// waits for it, so records keep their order).
    ahead: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Conversation {
    pub fn new(bus: Bus) -> Self {
        Conversation {
            messages: Vec::new(),
            log: None,
            bus,
            token_ratio: 1.0,
            ahead: Default::default(),
        }
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Anything of this session is in its store: a message, or a record
    /// (a workflow's position, a compaction), written by this run, or
    /// messages read back on resume.
    pub(crate) fn has_content(&self) -> bool {
        !self.messages.is_empty()
            || self
                .log
                .as_ref()
                .is_some_and(|p| p.wrote.load(Ordering::Acquire))
    }

    /// Append a message and store it.
    pub(crate) async fn append(&mut self, session_id: &str, message: Message) {
        let index = self.push(message);
        self.persist(session_id, &[index]).await;
    }

    /// Append a message and start storing it: the caller goes on (composes
    /// and sends the next request) and must [`settle`](Self::settle) before
    /// anything follows from the message (an answer read, a tool run).
    pub(crate) async fn append_ahead(&mut self, session_id: &str, message: Message) {
        let index = self.push(message);
        self.settle().await;
        let Some(write) = self.write_of(session_id, &[index]) else {
            return;
        };
        *self.lock_ahead() = Some(tokio::spawn(write.run()));
    }

    /// Wait until the write ahead, if any, is confirmed (or has failed and
    /// said so).
    pub(crate) async fn settle(&self) {
        let ahead = self.lock_ahead().take();
        if let Some(ahead) = ahead
            && let Err(e) = ahead.await
        {
            tracing::warn!("a session log write ended abnormally: {e}");
        }
    }

    fn lock_ahead(&self) -> std::sync::MutexGuard<'_, Option<JoinHandle<()>>> {
        self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Push a scrubbed message; its index.
    fn push(&mut self, mut message: Message) -> usize {
        self.scrub_secrets(&mut message);
        self.bus.record(message_appended(&message, None));
        if let Some(p) = self.log.as_mut()
            && p.title.is_empty()
            && message.role == Role::User
            && let Some(ContentPart::Text(t)) = message.content.first()
        {
            p.title = t.chars().take(80).collect();
        }
        self.messages.push(message);
        self.messages.len() - 1
    }

    /// Cut known secret values out of `message`.
    pub(crate) fn scrub_secrets(&self, message: &mut Message) {
        for part in &mut message.content {
            match part {
                ContentPart::Text(t) => self.bus.scrub(t),
                ContentPart::ToolCall(c) => self.bus.scrub(&mut c.arguments),
                ContentPart::ToolResult(r) => {
                    for p in &mut r.content {
                        if let ResultPart::Text(t) = p {
                            self.bus.scrub(t);
                        }
                    }
                }
                ContentPart::Image(_) | ContentPart::Thinking(_) => {}
            }
        }
    }

    /// Append one non-message record (compaction, workflow position) to
    /// the session's log, redacted.
    pub(crate) async fn append_record(&self, session_id: &str, record: String) {
        self.settle().await;
        let Some(p) = &self.log else { return };
        let record = self.bus.redact(&record);
        match p.store.store_append(session_id, &[record]).await {
            Ok(()) => p.wrote.store(true, Ordering::Release),
            Err(e) => failed(&self.bus, session_id, &p.store, e.to_string(), None),
        }
    }

    /// Store the messages at `indexes`, after the write ahead.
    pub(crate) async fn persist(&self, session_id: &str, indexes: &[usize]) {
        self.settle().await;
        if let Some(write) = self.write_of(session_id, indexes) {
            write.run().await;
        }
    }

    /// The write of the messages at `indexes` (redacted: secrets never
    /// reach session files, whatever a tool printed); none without a store.
    fn write_of(&self, session_id: &str, indexes: &[usize]) -> Option<LogWrite> {
        let p = self.log.as_ref()?;
        Some(LogWrite {
            store: p.store.clone(),
            wrote: p.wrote.clone(),
            bus: self.bus.clone(),
            session_id: session_id.to_string(),
            records: indexes
                .iter()
                .filter_map(|i| self.messages.get(*i))
                .map(|m| self.bus.redact(&message_record(m)))
                .collect(),
            indexes: indexes.iter().map(|i| *i as u64).collect(),
        })
    }

    /// Forget every message (the next turn starts a fresh conversation).
    pub fn clear(&mut self, session_id: &str) {
        self.messages.clear();
        self.bus
            .trace()
            .push(stud_protocol::replay_trace::TraceEntry::Cleared);
        self.bus.record(KernelEvent::HistoryCleared {
            session_id: session_id.to_string(),
        });
    }
}

/// One write of message records to the session's log, confirmed by
/// `message.persisted` per message or refused by `persistence.failed`.
struct LogWrite {
    store: Arc<Extension>,
    wrote: Arc<AtomicBool>,
    bus: Bus,
    session_id: String,
    records: Vec<String>,
    indexes: Vec<u64>,
}

impl LogWrite {
    async fn run(self) {
        match self
            .store
            .store_append(&self.session_id, &self.records)
            .await
        {
            Ok(()) => {
                self.wrote.store(true, Ordering::Release);
                for index in self.indexes {
                    self.bus.record(KernelEvent::MessagePersisted {
                        session_id: self.session_id.clone(),
                        index,
                        store: self.store.id().to_string(),
                    });
                }
            }
            Err(e) => failed(
                &self.bus,
                &self.session_id,
                &self.store,
                e.to_string(),
                Some(self.indexes),
            ),
        }
    }
}

/// `persistence.failed`: the store refused a write.
fn failed(
    bus: &Bus,
    session_id: &str,
    store: &Extension,
    error: String,
    indexes: Option<Vec<u64>>,
) {
    bus.record(KernelEvent::PersistenceFailed {
        session_id: session_id.to_string(),
        error,
        store: Some(store.id().to_string()),
        code: None,
        indexes,
    });
}
