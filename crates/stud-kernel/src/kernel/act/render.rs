//! RENDER: the final text through its hook slots to the UI.

use serde_json::Value;

use super::Lane;
use crate::kernel::turn_status::TurnStatus;
use crate::manifest::Stage;
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{Render, SlotPayload};

pub(crate) async fn render<L: Lane>(lane: &mut L, text: String) -> Result<String, TurnStatus> {
    lane.boundary("render").await;
    let s = lane.session();
    let rewritten = s
        .pre(Stage::Render, || Render { text: text.clone() }.into_value())
        .await?;
    let text = rewritten
        .as_ref()
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or(text);
    s.bus.record(KernelEvent::Render { text: text.clone() });
    s.post(Stage::Render, || Render { text: text.clone() }.into_value())
        .await?;
    Ok(text)
}
