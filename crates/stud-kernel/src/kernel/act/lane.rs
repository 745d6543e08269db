//! The transcript an Act runs on, and what happens at its boundaries.

use crate::kernel::compaction::Fit;
use crate::kernel::payloads::message_appended;
use crate::kernel::session::Session;
use crate::runtime::domain::Request;
use crate::runtime::domain::{ContentPart, Message, Role};
use stud_protocol::events::KernelEvent;

/// Where an Act keeps its messages. The session's main line persists
/// them, compacts and applies reloads at stage boundaries; a stage
/// execution's lane is a fresh transcript that only lives for the Act.
pub(crate) trait Lane {
    fn parts(&self) -> super::ActParts<'_>;
    fn transcript(&self) -> &[Message];
    /// A stage is about to start (`compose-request`, `tool-call`, ...).
    async fn boundary(&mut self, name: &'static str);
    async fn append(&mut self, message: Message);
    /// Append a message the next request carries: stored while the
    /// request is composed and sent, waited for by [`settle`](Self::settle).
    async fn append_ahead(&mut self, message: Message) {
        self.append(message).await;
    }
    /// Wait for what [`append_ahead`](Self::append_ahead) is storing
    /// (before the answer is read).
    async fn settle(&mut self) {}
    /// Make the transcript fit the context window; `true` when it changed.
    async fn fit(&mut self, request: &Request, force: bool) -> bool;
    /// Learn from the provider's count how good the estimate was.
    fn calibrate(&mut self, raw: u64, reported: u64);
}

/// A plain turn: the session's own history.
pub(crate) struct MainLane<'a>(pub &'a mut Session);

impl Lane for MainLane<'_> {
    fn parts(&self) -> super::ActParts<'_> {
        self.0.act_parts()
    }
    fn transcript(&self) -> &[Message] {
        &self.0.conversation.messages
    }
    async fn boundary(&mut self, name: &'static str) {
        self.0.apply_reloads(name).await;
        if name == "compose-request" {
            for text in self.0.steering.take() {
                self.0
                    .bus
                    .record(KernelEvent::TurnSteered { text: text.clone() });
                self.0
                    .append_ahead(Message {
                        role: Role::User,
                        content: vec![ContentPart::Text(text)],
                    })
                    .await;
            }
        }
    }
    async fn append(&mut self, message: Message) {
        self.0.append(message).await;
    }
    async fn append_ahead(&mut self, message: Message) {
        self.0.append_ahead(message).await;
    }
    async fn settle(&mut self) {
        self.0.settle().await;
    }
    async fn fit(&mut self, request: &Request, force: bool) -> bool {
        let s = &mut *self.0;
        let Some(window) = s
            .roster
            .capabilities()
            .map(|c| u64::from(c.context_window))
            .filter(|w| *w > 0)
        else {
            return false;
        };
        let fitted = s
            .conversation
            .fit(Fit {
                session_id: &s.id,
                request,
                window,
                config: s.config.compaction,
                summarizer: &s.roster.provider,
                params: s.request_params(),
                force,
                warned: &mut s.turn.context_warned,
            })
            .await;
        s.ledger.charge(&s.roster.model, &fitted.spent);
        fitted.changed
    }
    fn calibrate(&mut self, raw: u64, reported: u64) {
        self.0.conversation.calibrate(raw, reported);
    }
}

/// A stage execution: a transcript of its own, recorded on the bus under
/// its execution id. Reloads wait for the workflow's stage boundaries and
/// nothing is compacted (a stage's `turnCap` bounds it instead).
pub(crate) struct StageLane<'a> {
    pub session: &'a Session,
    pub execution_id: String,
    pub transcript: Vec<Message>,
}

impl Lane for StageLane<'_> {
    fn parts(&self) -> super::ActParts<'_> {
        self.session.act_parts()
    }
    fn transcript(&self) -> &[Message] {
        &self.transcript
    }
    async fn boundary(&mut self, _name: &'static str) {}
    async fn append(&mut self, mut message: Message) {
        self.session.conversation.scrub_secrets(&mut message);
        self.session
            .bus
            .record(message_appended(&message, Some(&self.execution_id)));
        self.transcript.push(message);
    }
    async fn fit(&mut self, _request: &Request, _force: bool) -> bool {
        false
    }
    fn calibrate(&mut self, _raw: u64, _reported: u64) {}
}
