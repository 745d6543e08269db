//! The conversation: the messages a session sends the model, and their
//! log in the session store. Every appended message is a log record,
//! reported persisted only once the store confirmed it; known secret
//! values are cut out first, so a key a tool printed or the person
//! pasted never reaches the model's context or a session file.

use super::events::Bus;
use super::payloads::message_appended;
use super::persist::{Persistence, message_record};
use crate::runtime::domain::{ContentPart, Message, ResultPart, Role};
use std::sync::atomic::Ordering;
use stud_protocol::events::KernelEvent;

pub struct Conversation {
    pub(crate) messages: Vec<Message>,
    /// The link to the session store, once attached.
    pub(crate) log: Option<Persistence>,
    pub(crate) bus: Bus,
    /// Provider tokens per estimated token (calibrated from usage).
    pub(crate) token_ratio: f64,
}

impl Conversation {
    pub fn new(bus: Bus) -> Self {
        Conversation {
            messages: Vec::new(),
            log: None,
            bus,
            token_ratio: 1.0,
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
    pub(crate) async fn append(&mut self, session_id: &str, mut message: Message) {
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
        let index = self.messages.len() - 1;
        self.persist(session_id, &[index]).await;
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
        let Some(p) = &self.log else { return };
        let record = self.bus.redact(&record);
        match p.store.store_append(session_id, &[record]).await {
            Ok(()) => p.wrote.store(true, Ordering::Release),
            Err(e) => self.store_failed(session_id, p, e.to_string(), None),
        }
    }

    /// Store the messages at `indexes`.
    pub(crate) async fn persist(&self, session_id: &str, indexes: &[usize]) {
        let Some(p) = &self.log else { return };
        let records: Vec<String> = indexes
            .iter()
            .filter_map(|i| self.messages.get(*i))
            // Secrets never reach session files, whatever a tool printed.
            .map(|m| self.bus.redact(&message_record(m)))
            .collect();
        match p.store.store_append(session_id, &records).await {
            Ok(()) => {
                p.wrote.store(true, Ordering::Release);
                for i in indexes {
                    self.bus.record(KernelEvent::MessagePersisted {
                        session_id: session_id.to_string(),
                        index: *i as u64,
                        store: p.store.id().to_string(),
                    });
                }
            }
            Err(e) => self.store_failed(
                session_id,
                p,
                e.to_string(),
                Some(indexes.iter().map(|i| *i as u64).collect()),
            ),
        }
    }

    /// `persistence.failed`: the store refused a write.
    pub(crate) fn store_failed(
        &self,
        session_id: &str,
        p: &Persistence,
        error: String,
        indexes: Option<Vec<u64>>,
    ) {
        self.bus.record(KernelEvent::PersistenceFailed {
            session_id: session_id.to_string(),
            error,
            store: Some(p.store.id().to_string()),
            code: None,
            indexes,
        });
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
