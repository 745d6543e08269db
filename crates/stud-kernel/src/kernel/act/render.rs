//! RENDER: the final text through its hook slots to the UI.

use super::Lane;
use crate::kernel::turn_status::TurnStatus;
use crate::manifest::Stage;
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{Render, SlotPayload};

pub(crate) async fn render<L: Lane>(lane: &mut L, text: String) -> Result<String, TurnStatus> {
    lane.boundary("render").await;
    let s = lane.parts();
    let rewritten = s
        .pre(Stage::Render, || Render { text: text.clone() }.into_value())
        .await?;
    let text = rewritten
        .as_ref()
        .and_then(Render::from_value)
        .map_or(text, |r| r.text);
    s.bus.record(KernelEvent::Render { text: text.clone() });
    s.post(Stage::Render, || Render { text: text.clone() }.into_value())
        .await?;
    Ok(text)
}
