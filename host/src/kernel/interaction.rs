//! The interaction protocol: typed requests answered by the active
//! interactors (UI extensions). One prompt at a time; all interactors are
//! asked, the first answer wins and the others are dismissed; a timeout
//! counts as a rejection. Headless runs have no interactor: a request
//! halts the turn, unless `--yolo` answers it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::json;
use tokio::sync::Mutex;

use super::events::Bus;
use crate::runtime::Extension;
use crate::runtime::bindings::stud::extension::interaction::{
    InteractionKind, InteractionRequest, InteractionResponse, InteractionStatus,
};

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
    interactors: Vec<Arc<Extension>>,
    headless: bool,
    yolo: bool,
    timeout: Duration,
    one_at_a_time: Mutex<()>,
    next: AtomicU64,
    bus: Bus,
}

impl Interactions {
    pub fn new(
        interactors: Vec<Arc<Extension>>,
        headless: bool,
        yolo: bool,
        timeout: Duration,
        bus: Bus,
    ) -> Self {
        Interactions {
            interactors,
            headless,
            yolo,
            timeout,
            one_at_a_time: Mutex::new(()),
            next: AtomicU64::new(1),
            bus,
        }
    }

    pub fn is_headless(&self) -> bool {
        self.headless
    }

    pub async fn request(&self, kind: InteractionKind) -> Answer {
        let _turn = self.one_at_a_time.lock().await;
        let correlation_id = format!("i{}", self.next.fetch_add(1, Ordering::Relaxed));
        self.bus.record(
            "interaction.requested",
            json!({"id": correlation_id, "kind": kind_json(&kind)}),
        );
        if self.headless || self.interactors.is_empty() {
            if !self.yolo {
                self.bus.record(
                    "interaction.halted",
                    json!({"id": correlation_id, "reason": "no interactor (headless)"}),
                );
                return Answer::Halt;
            }
            let response = auto_answer(&correlation_id, &kind);
            self.bus.record(
                "interaction.answered",
                json!({"id": correlation_id, "by": "yolo", "status": status_str(response.status)}),
            );
            return Answer::Response(response);
        }
        let request = InteractionRequest {
            correlation_id: correlation_id.clone(),
            kind,
        };
        let mut asks: FuturesUnordered<_> = self
            .interactors
            .iter()
            .map(|ui| {
                let request = request.clone();
                async move { (ui.id().clone(), ui.ui_on_interaction(&request).await) }
            })
            .collect();
        let winner = tokio::time::timeout(self.timeout, async {
            while let Some((id, result)) = asks.next().await {
                match result {
                    Ok(r) => return Some((id, r)),
                    Err(e) => self.bus.publish(
                        "diagnostic",
                        json!({"level": "warn", "message": format!("interactor failed: {e}")}),
                    ),
                }
            }
            None
        })
        .await;
        drop(asks);
        let (by, response) = match winner {
            Ok(Some((id, r))) => (
                id.to_string(),
                InteractionResponse {
                    correlation_id: correlation_id.clone(),
                    ..r
                },
            ),
            Ok(None) => (
                "none".into(),
                rejected(&correlation_id, InteractionStatus::Rejected),
            ),
            Err(_) => (
                "timeout".into(),
                rejected(&correlation_id, InteractionStatus::Timeout),
            ),
        };
        for ui in &self.interactors {
            if ui.id().as_str() != by {
                let _ = tokio::time::timeout(
                    Duration::from_millis(200),
                    ui.ui_dismiss(&correlation_id),
                )
                .await;
            }
        }
        self.bus.record(
            "interaction.answered",
            json!({"id": correlation_id, "by": by, "status": status_str(response.status)}),
        );
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
