//! An editor session's prompts through the kernel's front door: each
//! `session/prompt` is a submission whose answer becomes the request's
//! stop reason (or typed error); a command's text is an agent message.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::failure::Failure;
use super::updates::text;
use super::worker::{Turn, send_update};
use crate::kernel::commands::After;
use crate::kernel::front_door::{self, Answer, Flow, FrontEnd, Refusal, SessionSwitch, Submission};
use crate::kernel::launch::LaunchError;
use crate::kernel::shell_input::ShellRun;
use crate::kernel::{Launched, Subscriber, TurnStatus};
use crate::paths::StudHome;

type Reply = oneshot::Sender<Result<schema::StopReason, Failure>>;

/// What a session's turn loop does once the editor knows the session.
pub(super) struct Known {
    pub conn: ConnectionTo<Client>,
    pub home: StudHome,
    /// Fires when the editor was told.
    pub known: oneshot::Receiver<()>,
    /// Updates to send then (the plan of a state machine attached at
    /// start).
    pub first: Vec<Value>,
}

pub(super) async fn run_turns(
    mut launched: Launched,
    turns: mpsc::UnboundedReceiver<Turn>,
    cancel: Rc<RefCell<CancellationToken>>,
    sub: Arc<Subscriber>,
    Known {
        conn,
        home,
        known,
        first,
    }: Known,
) {
    // Prompts wait here until the editor's servers are decided.
    if known.await.is_ok() {
        let id = launched.session.id.clone();
        for update in first {
            send_update(&conn, &id, update);
        }
        super::mcp_servers::trust_in_editor(&mut launched, &home, &conn).await;
    }
    let mut editor = Editor {
        turns,
        cancel,
        sub,
        conn,
        reply: None,
    };
    // An editor session never switches (`ENDS_SESSIONS` is false), so the
    // door cannot fail.
    if let Ok(mut launched) = front_door::serve(launched, &mut editor).await {
        editor.reply_end_turn();
        launched.shutdown().await;
    }
}

struct Editor {
    turns: mpsc::UnboundedReceiver<Turn>,
    /// The running turn's token, for `session/cancel`.
    cancel: Rc<RefCell<CancellationToken>>,
    sub: Arc<Subscriber>,
    conn: ConnectionTo<Client>,
    /// The prompt request waiting for its answer.
    reply: Option<Reply>,
}

impl Editor {
    /// A prompt that ran nothing (an empty line) ends its turn plainly.
    fn reply_end_turn(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(Ok(schema::StopReason::EndTurn));
        }
    }
}

impl FrontEnd for Editor {
    const ENDS_SESSIONS: bool = false;
    const OWNS_TERMINAL: bool = false;

    async fn next(&mut self, _launched: &Launched) -> Option<Submission> {
        self.reply_end_turn();
        let (text, images, reply) = self.turns.recv().await?;
        self.reply = Some(reply);
        Some(Submission::Line { text, images })
    }

    fn turn_started(&mut self, token: &CancellationToken) {
        *self.cancel.borrow_mut() = token.clone();
    }

    async fn answered(&mut self, launched: &Launched, answer: Answer) -> Flow {
        let stop = match answer {
            Answer::Turn(outcome) => stop_reason(outcome.status),
            Answer::Command { name, done } => {
                let mut shown = done.text;
                if done.after != After::Continue {
                    shown.push_str(&format!(
                        "\n({name} ends or switches sessions in a terminal; in an editor, open or close the session there)"
                    ));
                }
                send_update(
                    &self.conn,
                    &launched.session.id,
                    json!({"sessionUpdate": "agent_message_chunk", "content": text(&shown)}),
                );
                Ok(schema::StopReason::EndTurn)
            }
            Answer::Said(said) => {
                let shown = match said {
                    Ok(text) | Err(text) => text,
                };
                send_update(
                    &self.conn,
                    &launched.session.id,
                    json!({"sessionUpdate": "agent_message_chunk", "content": text(&shown)}),
                );
                Ok(schema::StopReason::EndTurn)
            }
            Answer::Shell { command, run } => {
                let shown = match run {
                    ShellRun::Ran { output, .. } => format!("!{command}\n{output}"),
                    ShellRun::NotRun(why) => format!("!{command} did not run: {why}"),
                };
                send_update(
                    &self.conn,
                    &launched.session.id,
                    json!({"sessionUpdate": "agent_message_chunk", "content": text(&shown)}),
                );
                Ok(schema::StopReason::EndTurn)
            }
            Answer::Refused(Refusal::ImagesUnsupported(why)) => {
                Err(Failure::invalid("prompt", "model-without-vision", why))
            }
            Answer::Refused(Refusal::InvalidCommand(why)) => {
                Err(Failure::invalid("prompt", "invalid-command", why))
            }
            Answer::Refused(Refusal::Mention(why)) => {
                Err(Failure::invalid("prompt", "mention-refused", why))
            }
        };
        // Every update of the turn reaches the editor before its answer.
        // (Bounded: a stuck forwarder must not hold the answer forever.)
        let _ = tokio::time::timeout(Duration::from_secs(2), self.sub.idle()).await;
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(stop);
        }
        Flow::Continue
    }

    async fn switch(
        &mut self,
        launched: Launched,
        _to: SessionSwitch,
    ) -> Result<Launched, LaunchError> {
        Ok(launched)
    }
}

fn stop_reason(status: TurnStatus) -> Result<schema::StopReason, Failure> {
    match status {
        TurnStatus::Completed => Ok(schema::StopReason::EndTurn),
        TurnStatus::Cancelled => Ok(schema::StopReason::Cancelled),
        TurnStatus::Failed { code, .. } if code == "loop-bound-exceeded" => {
            Ok(schema::StopReason::MaxTurnRequests)
        }
        TurnStatus::Failed { code, message } => Err(Failure::failed(code, message)),
        TurnStatus::Halted { tool, key } => Err(Failure::failed(
            "approval-unanswered",
            format!("approval needed for {tool} `{key}` and nobody could answer"),
        )),
    }
}
