//! Tells the person when they are needed: a turn that has run at least
//! `notifications.afterSeconds` ends, or waits for their answer. Off
//! unless the person's own settings ask (`notifications.via`); the
//! sequence is the host's ([`super::terminal_signals`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use stud_protocol::events::{KernelEvent, TurnResult};

use super::events::{Bus, DEFAULT_QUEUE};
use super::services::KernelServices;
use super::terminal_signals::notification;
use crate::config::{Notifications, NotifyVia};

/// A turn shorter than this is watched, not waited for.
const DEFAULT_AFTER: Duration = Duration::from_secs(10);

pub fn spawn(
    bus: &Bus,
    services: Arc<KernelServices>,
    settings: &Notifications,
) -> Option<JoinHandle<()>> {
    let via = settings.via;
    if via == NotifyVia::Off {
        return None;
    }
    let after = settings
        .after_seconds
        .map_or(DEFAULT_AFTER, Duration::from_secs);
    let sub = bus.subscribe("notifications", DEFAULT_QUEUE);
    Some(tokio::spawn(async move {
        let mut started: Option<Instant> = None;
        while let Some(ev) = sub.next().await {
            sub.ack();
            // A subagent's turns are part of the person's turn.
            if ev.payload.get("agent").is_some() {
                continue;
            }
            let kernel = KernelEvent::from_wire(&ev.name, &ev.payload).and_then(Result::ok);
            let long = |s: &Option<Instant>| s.is_some_and(|t| t.elapsed() >= after);
            let text = match kernel {
                Some(KernelEvent::TurnStart { .. }) => {
                    started.get_or_insert_with(Instant::now);
                    continue;
                }
                Some(KernelEvent::TurnEnd { status, .. }) => {
                    let was_long = long(&started);
                    let elapsed = started.take().map(|t| t.elapsed().as_secs());
                    if !was_long {
                        continue;
                    }
                    let how = match status {
                        TurnResult::Ok => "done",
                        TurnResult::Cancelled => "stopped",
                        TurnResult::Halted => "halted",
                        TurnResult::Error => "ended with an error",
                    };
                    format!("stud: turn {how} after {}s", elapsed.unwrap_or(0))
                }
                Some(KernelEvent::InteractionRequested { kind, .. }) if long(&started) => {
                    match kind.get("approve").and_then(|t| t.as_str()) {
                        Some(tool) => format!("stud: {tool} waits for your approval"),
                        None => "stud: a question waits for your answer".to_string(),
                    }
                }
                _ => continue,
            };
            if let Some(seq) = notification(via, &text) {
                services.signal(&seq);
            }
        }
    }))
}
