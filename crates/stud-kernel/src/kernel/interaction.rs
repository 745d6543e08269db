//! The interaction protocol: typed requests answered by the one interactor
//! the user chose (`active.interactor`, global settings; the bundled
//! `console` by default). Other UIs only observe: an extension that merely
//! renders must never be able to approve a call. One prompt at a time; a
//! timeout counts as a rejection. Headless runs have no interactor: a
//! request halts the turn, unless `--yolo` answers it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use stud_protocol::replay_trace::TraceEntry;
use tokio::sync::Mutex;

use super::events::Bus;
use crate::runtime::Extension;
use crate::runtime::domain::{
    InteractionKind, InteractionRequest, InteractionResponse, InteractionStatus,
};
use stud_protocol::events::KernelEvent;

/// How long a person has to answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The result of a request.
#[derive(Debug, Clone)]
pub enum Answer {
    Response(InteractionResponse),
    /// Headless without `--yolo`: nobody can answer, the turn must stop.
    Halt,
}

pub struct Interactions {
    interactor: Option<Arc<Extension>>,
    headless: bool,
    yolo: bool,
    timeout: Duration,
    one_at_a_time: Mutex<()>,
    next: AtomicU64,
    bus: Bus,
    /// A full-screen UI is asked through its driver, so the question is
    /// serialised with the key events it handles.
    route: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Ask>>,
    /// Other UIs' terminal output, held while a question is open.
    held: std::sync::OnceLock<super::held_output::HeldOutput>,
}

/// A question for the full-screen UI's driver and where its answer goes.
pub struct Ask {
    pub request: InteractionRequest,
    pub reply: tokio::sync::oneshot::Sender<Result<InteractionResponse, crate::runtime::CallError>>,
}

impl Interactions {
    pub fn new(
        interactor: Option<Arc<Extension>>,
        headless: bool,
        yolo: bool,
        timeout: Duration,
        bus: Bus,
    ) -> Self {
        Interactions {
            interactor,
            headless,
            yolo,
            timeout,
            one_at_a_time: Mutex::new(()),
            next: AtomicU64::new(1),
            bus,
            route: std::sync::OnceLock::new(),
            held: std::sync::OnceLock::new(),
        }
    }

    /// Hold other UIs' terminal output while a question is open.
    pub fn hold_output_with(&self, held: super::held_output::HeldOutput) {
        let _ = self.held.set(held);
    }

    /// Send questions to a full-screen UI's driver from now on.
    pub fn route_through(&self, driver: tokio::sync::mpsc::UnboundedSender<Ask>) {
        let _ = self.route.set(driver);
    }

    pub fn is_headless(&self) -> bool {
        self.headless
    }

    /// The UI that answers questions, reads the person's input and draws
    /// the full screen; none in a headless run.
    pub fn interactor(&self) -> Option<&Arc<Extension>> {
        self.interactor.as_ref().filter(|_| !self.headless)
    }

    /// Ask, and keep the question and its answer in the trace.
    pub async fn request(&self, kind: InteractionKind) -> Answer {
        let question = kind_json(&kind);
        let answer = self.ask(kind).await;
        let (status, value) = match &answer {
            Answer::Halt => ("halted".to_string(), None),
            Answer::Response(r) => (status_str(r.status).to_string(), r.value.clone()),
        };
        self.bus.trace().push(TraceEntry::Answer {
            agent: self.bus.agent_path().map(str::to_string),
            question,
            status,
            value,
        });
        answer
    }

    async fn ask(&self, kind: InteractionKind) -> Answer {
        let _turn = self.one_at_a_time.lock().await;
        // Before the question is announced: a UI that sees it could
        // otherwise print over it at once.
        let _holding = self
            .held
            .get()
            .filter(|_| self.interactor().is_some())
            .map(|h| h.hold());
        let correlation_id = format!("i{}", self.next.fetch_add(1, Ordering::Relaxed));
        self.bus.record(KernelEvent::InteractionRequested {
            id: correlation_id.clone(),
            kind: kind_json(&kind),
        });
        if let Some(replay) = self.bus.replayer() {
            return self.replayed(replay, correlation_id, &kind);
        }
        let interactor = match &self.interactor {
            Some(ui) if !self.headless => ui,
            _ => {
                if !self.yolo {
                    self.bus.record(KernelEvent::InteractionHalted {
                        id: correlation_id.clone(),
                        reason: "no interactor (headless)".into(),
                    });
                    return Answer::Halt;
                }
                let response = auto_answer(&correlation_id, &kind);
                self.bus.record(KernelEvent::InteractionAnswered {
                    id: correlation_id.clone(),
                    by: "yolo".into(),
                    status: status_str(response.status).into(),
                });
                return Answer::Response(response);
            }
        };
        let request = InteractionRequest {
            correlation_id: correlation_id.clone(),
            kind,
        };
        let answer = match self.route.get() {
            Some(driver) => {
                let (reply, answer) = tokio::sync::oneshot::channel();
                let routed = driver.send(Ask {
                    request: request.clone(),
                    reply,
                });
                tokio::time::timeout(self.timeout, async move {
                    match (routed, answer.await) {
                        (Ok(()), Ok(r)) => r,
                        _ => interactor.ui_on_interaction(&request).await,
                    }
                })
                .await
            }
            None => {
                tokio::time::timeout(self.timeout, interactor.ui_on_interaction(&request)).await
            }
        };
        let (by, response) = match answer {
            Ok(Ok(r)) => (
                interactor.id().to_string(),
                InteractionResponse {
                    correlation_id: correlation_id.clone(),
                    ..r
                },
            ),
            Ok(Err(e)) => {
                self.bus.publish(KernelEvent::Diagnostic {
                    level: stud_protocol::events::Level::Warn,
                    message: format!("interactor failed: {e}"),
                });
                (
                    "none".into(),
                    rejected(&correlation_id, InteractionStatus::Rejected),
                )
            }
            Err(_) => {
                let _ = tokio::time::timeout(
                    Duration::from_millis(200),
                    interactor.ui_dismiss(&correlation_id),
                )
                .await;
                (
                    "timeout".into(),
                    rejected(&correlation_id, InteractionStatus::Timeout),
                )
            }
        };
        self.bus.record(KernelEvent::InteractionAnswered {
            id: correlation_id.clone(),
            by,
            status: status_str(response.status).into(),
        });
        Answer::Response(response)
    }
}

impl Interactions {
    /// A replay's question: answered as the recording was, refused when
    /// the recording never asked it.
    fn replayed(
        &self,
        replay: &super::replay::Replayer,
        correlation_id: String,
        kind: &InteractionKind,
    ) -> Answer {
        use super::replay::replayer::ReplayAnswer;
        let response = match replay.answer(self.bus.agent_path(), &kind_json(kind)) {
            ReplayAnswer::Halted => {
                self.bus.record(KernelEvent::InteractionHalted {
                    id: correlation_id,
                    reason: "halted in the recording".into(),
                });
                return Answer::Halt;
            }
            ReplayAnswer::Answered { status, value } => InteractionResponse {
                correlation_id: correlation_id.clone(),
                status: match status.as_str() {
                    "accepted" => InteractionStatus::Accepted,
                    "timeout" => InteractionStatus::Timeout,
                    _ => InteractionStatus::Rejected,
                },
                value,
            },
            ReplayAnswer::Unknown => rejected(&correlation_id, InteractionStatus::Rejected),
        };
        self.bus.record(KernelEvent::InteractionAnswered {
            id: correlation_id,
            by: "replay".into(),
            status: status_str(response.status).into(),
        });
        Answer::Response(response)
    }
}

fn rejected(id: &str, status: InteractionStatus) -> InteractionResponse {
    InteractionResponse {
        correlation_id: id.to_string(),
        status,
        value: None,
    }
}

/// What `--yolo` answers in a headless run.
fn auto_answer(id: &str, kind: &InteractionKind) -> InteractionResponse {
    let value = match kind {
        InteractionKind::Ask(_) => String::new(),
        InteractionKind::Confirm(_) | InteractionKind::Approve(_) => "yes".into(),
        InteractionKind::Select(c) => c.options.first().cloned().unwrap_or_default(),
    };
    InteractionResponse {
        correlation_id: id.to_string(),
        status: InteractionStatus::Accepted,
        value: Some(value),
    }
}

pub fn status_str(s: InteractionStatus) -> &'static str {
    match s {
        InteractionStatus::Accepted => "accepted",
        InteractionStatus::Rejected => "rejected",
        InteractionStatus::Timeout => "timeout",
    }
}

fn kind_json(kind: &InteractionKind) -> serde_json::Value {
    match kind {
        InteractionKind::Ask(p) => json!({"ask": p}),
        InteractionKind::Confirm(p) => json!({"confirm": p}),
        InteractionKind::Select(c) => json!({"select": c.prompt, "options": c.options}),
        InteractionKind::Approve(a) => {
            json!({"approve": a.tool, "key": a.approval_key, "description": a.description})
        }
    }
}
