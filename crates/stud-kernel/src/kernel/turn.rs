//! One plain turn: RECEIVE_INPUT, then an [`Act`](super::act) on the
//! session's history bounded by `max_iterations`. Every stage is bracketed
//! by `stage.pre`/`stage.post` events and its two hook slots; a deny at a
//! pre slot skips the stage body and its post slot.

use tokio_util::sync::CancellationToken;

use super::act::{self, ActEnd, ActSpec, Bound, MainLane};
use super::session::Session;
use super::turn_status::{TurnOutcome, TurnStages, TurnStatus, fail};
use super::usage::{usage_event, zero_usage};
use crate::manifest::Stage;
use crate::runtime::domain::{ContentPart, Message, Role, Usage};
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{self, SlotPayload};

impl Session {
    pub async fn run_turn(&mut self, input: &str, cancel: &CancellationToken) -> TurnOutcome {
        let span = tracing::info_span!("turn", session = %self.id, n = self.ledger.turns + 1);
        let body = async {
            let turn_id = self.open_turn(input, TurnStages::None).await;
            let mut iterations = 0;
            let mut usage = zero_usage();
            let result = self
                .turn_body(input, cancel, &mut iterations, &mut usage)
                .await;
            let (status, text) = match result {
                Ok(text) => (TurnStatus::Completed, text),
                Err(s) => (s, String::new()),
            };
            self.close_turn(turn_id, status, text, iterations, usage)
                .await
        };
        tracing::Instrument::instrument(body, span).await
    }

    /// Start a turn: reloads that wait for a turn boundary, the turn id,
    /// `turn.start` (with `extra`, a stage's id say).
    pub(crate) async fn open_turn(&mut self, input: &str, stages: TurnStages) -> String {
        self.apply_reloads("between-turns").await;
        self.ledger.turns += 1;
        self.metering.turn_started();
        let turn_id = format!("{}-t{}", self.id, self.ledger.turns);
        if let Some(c) = &self.checkpoints {
            c.turn_opened(self.ledger.turns, input, self.conversation.messages.len());
        }
        self.bus.set_turn(Some(turn_id.clone()));
        let (stage_id, stage_ids, join) = match stages {
            TurnStages::None => (None, None, None),
            TurnStages::One(id) => (Some(id), None, None),
            TurnStages::Parallel { stages, join } => (None, Some(stages), join),
        };
        self.bus.record(KernelEvent::TurnStart {
            turn_id: turn_id.clone(),
            input: input.into(),
            stage_id,
            stage_ids,
            join,
        });
        turn_id
    }

    /// End a turn: count what it spent, `turn.end`, the manifest.
    pub(crate) async fn close_turn(
        &mut self,
        turn_id: String,
        status: TurnStatus,
        text: String,
        iterations: u32,
        usage: Usage,
    ) -> TurnOutcome {
        // A turn that ended before its answer (a refused request, say)
        // still has its input in the log before `turn.end`.
        self.settle().await;
        // The turn is over: what it held goes with it.
        let children = std::mem::take(&mut self.turn)
            .child_spend
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        self.ledger.charge_child(&children.usage, children.cost_usd);
        // The turn's cost includes its children's (rolled up).
        let own_cost = self.ledger.charge(&self.roster.model, &usage);
        let turn_cost = own_cost + children.cost_usd;
        let tokens = super::usage::prompt_tokens(&usage) + usage.output_tokens;
        let provider = self.roster.provider_id().to_string();
        for e in self.metering.turn_ended(&provider, tokens, own_cost) {
            self.bus.record(e);
        }
        let message = match &status {
            TurnStatus::Failed { message, .. } => message.clone(),
            TurnStatus::Halted { tool, key } => {
                format!("approval needed for {tool} `{key}` but this run is headless")
            }
            _ => String::new(),
        };
        let code = match &status {
            TurnStatus::Failed { code, .. } => code.clone(),
            _ => String::new(),
        };
        self.bus.record(KernelEvent::TurnEnd {
            turn_id: turn_id.clone(),
            status: status.result(),
            code,
            message,
            iterations: iterations.into(),
            usage: usage_event(&usage),
            session_usage: usage_event(&self.ledger.usage),
            cost_usd: turn_cost,
            session_cost_usd: self.ledger.cost_usd,
        });
        self.close_checkpoint(&turn_id).await;
        self.bus.set_turn(None);
        self.flush_trace().await;
        self.save_manifest().await;
        TurnOutcome {
            turn_id,
            status,
            text,
            iterations,
            usage,
        }
    }

    /// A prompt as the person gave it, and the provider and model it goes
    /// to, in the trace.
    pub(crate) fn trace_input(&self, input: &str) {
        // A child's prompt comes from its parent's `task` call, which the
        // replay makes again.
        if self.bus.agent_path().is_some() {
            return;
        }
        let trace = self.bus.trace();
        trace.model(self.roster.provider_id(), &self.roster.model);
        trace.push(stud_protocol::replay_trace::TraceEntry::Input { text: input.into() });
    }

    /// Write what the trace collected to the session's log (the main
    /// session's, outside a replay: a replay keeps its own to compare).
    pub(crate) async fn flush_trace(&self) {
        if self.bus.agent_path().is_some() || self.bus.replayer().is_some() {
            return;
        }
        // Nowhere to keep it: what was collected goes (it would only grow).
        if self.conversation.log.is_none() {
            self.bus.trace().take();
            return;
        }
        // A session with nothing kept yet (only commands ran) is not saved
        // for its trace alone; it waits for the first turn.
        if !self.conversation.has_content() {
            return;
        }
        let entries = self.bus.trace().take();
        if entries.is_empty() {
            return;
        }
        let record = super::replay::trace::record(&entries, |v| self.bus.redact_value(v));
        self.append_record(record).await;
    }

    /// The turn's journal entry (with the tree after it, when it may have
    /// changed files).
    async fn close_checkpoint(&self, turn_id: &str) {
        let Some(c) = self.checkpoints.clone() else {
            return;
        };
        let first = c
            .open_history_len()
            .and_then(|n| self.conversation.messages.get(n))
            .map(super::checkpoints::message_digest);
        let closed = tokio::task::spawn_blocking(move || c.turn_closed(first)).await;
        match closed {
            Ok(Ok(r)) if !r.changed.is_empty() || !r.skipped.is_empty() => {
                if !r.skipped.is_empty() {
                    self.bus.publish(KernelEvent::Diagnostic {
                        level: stud_protocol::events::Level::Warn,
                        message: format!(
                            "the checkpoint did not keep {} (checkpoints.maxFileMiB, checkpoints.maxSnapshotMiB): /undo cannot put back what this turn did to them",
                            r.skipped.join("; ")
                        ),
                    });
                }
                self.bus.record(KernelEvent::CheckpointRecorded {
                    turn_id: turn_id.to_string(),
                    changed: r.changed,
                    skipped: r.skipped,
                });
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => self.bus.publish(KernelEvent::Diagnostic {
                level: stud_protocol::events::Level::Warn,
                message: format!("{e}; this turn cannot be undone with /undo"),
            }),
            Err(e) => tracing::warn!("checkpoint: {e}"),
        }
    }

    async fn turn_body(
        &mut self,
        input: &str,
        cancel: &CancellationToken,
        iterations: &mut u32,
        usage: &mut Usage,
    ) -> Result<String, TurnStatus> {
        // A spent budget stops before the input is taken: no user message
        // is left in the history without an answer.
        self.act_parts().check_budget(usage)?;
        let stage = tracing::debug_span!("stage", name = %Stage::ReceiveInput);
        tracing::Instrument::instrument(self.receive_input(input), stage).await?;
        let spec = ActSpec {
            system: self.config.system_prompt.clone(),
            completion: None,
            bound: Bound::MaxIterations(self.config.max_iterations),
            stage: None,
        };
        match act::run(&mut MainLane(self), &spec, cancel, iterations, usage).await? {
            ActEnd::Answered(text) | ActEnd::Completed { text, .. } => Ok(text),
            // Only a stage's cap ends an Act normally.
            ActEnd::CapHit => Err(fail("loop-bound-exceeded", "the turn reached its bound")),
        }
    }

    async fn receive_input(&mut self, input: &str) -> Result<(), TurnStatus> {
        self.apply_reloads("receive-input").await;
        let rewritten = self
            .act_parts()
            .pre(Stage::ReceiveInput, || {
                hook_payloads::Input {
                    input: input.to_string(),
                }
                .into_value()
            })
            .await?;
        let text = rewritten
            .as_ref()
            .and_then(hook_payloads::Input::from_value)
            .map_or_else(|| input.to_string(), |i| i.input)
            .trim()
            .to_string();
        if text.is_empty() {
            return Err(fail("input-invalid", "the input is empty; type a message"));
        }
        let rewritten = self
            .act_parts()
            .post(Stage::ReceiveInput, || {
                hook_payloads::Input {
                    input: text.clone(),
                }
                .into_value()
            })
            .await?;
        let text = rewritten
            .as_ref()
            .and_then(hook_payloads::Input::from_value)
            .map_or(text, |i| i.input);
        let images = std::mem::take(&mut self.turn.images);
        let content = std::iter::once(ContentPart::Text(text))
            .chain(images.into_iter().map(ContentPart::Image))
            .collect();
        self.append_ahead(Message {
            role: Role::User,
            content,
        })
        .await;
        Ok(())
    }
}
