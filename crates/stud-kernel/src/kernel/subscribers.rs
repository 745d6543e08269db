//! The session's subscribers on the event bus: each UI extension's event
//! pump and each logger's sink. A subscriber that fails is reported on the
//! bus, never fatal.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::events::{Bus, DEFAULT_QUEUE, Subscriber};
use super::first_request::FirstRequest;
use crate::runtime::Extension;
use crate::runtime::domain as wit;
use stud_protocol::events::KernelEvent;

/// An event as the WIT contracts carry it.
pub fn wit_event(ev: &super::Event) -> wit::Event {
    wit::Event {
        name: ev.name.clone(),
        sequence: ev.seq,
        timestamp_ms: ev.timestamp_ms,
        turn_id: ev.turn_id.clone(),
        payload: ev.payload.to_string(),
    }
}

pub(crate) fn spawn_ui(sub: Arc<Subscriber>, bus: &Bus, ui: Arc<Extension>) -> JoinHandle<()> {
    let diag = bus.clone();
    tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            if let Err(e) = ui.ui_on_event(&wit_event(&ev)).await {
                diag.publish(KernelEvent::SubscriberFailed {
                    extension: ui.id().to_string(),
                    error: e.to_string(),
                });
            }
            sub.ack();
        }
    })
}

/// A logger: subscribed now (it misses nothing), writing once the first
/// request is out.
pub(crate) fn spawn_logger(
    bus: &Bus,
    logger: Arc<Extension>,
    first_request: FirstRequest,
) -> JoinHandle<()> {
    let sub = bus.subscribe(logger.id().as_str(), DEFAULT_QUEUE);
    let diag = bus.clone();
    tokio::spawn(async move {
        first_request.wait().await;
        while let Some(ev) = sub.next().await {
            if let Err(e) = logger.logger_sink(&wit_event(&ev)).await {
                diag.publish(KernelEvent::SubscriberFailed {
                    extension: logger.id().to_string(),
                    error: e.to_string(),
                });
            }
        }
    })
}
