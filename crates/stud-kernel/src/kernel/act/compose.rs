//! COMPOSE_REQUEST: transcript, system prompt and tools into a request,
//! through the stage's hook slots.

use serde_json::Value;

use super::{ActSpec, Lane};
use crate::kernel::payloads::{messages_from, messages_json};
use crate::kernel::turn_status::TurnStatus;
use crate::manifest::Stage;
use crate::runtime::domain::Request;
use crate::runtime::domain::ToolDefinition;
use stud_protocol::hook_payloads::{ComposePost, ComposePre, SlotPayload};

pub(crate) async fn compose_request<L: Lane>(
    lane: &mut L,
    spec: &ActSpec,
    iteration: u32,
) -> Result<Request, TurnStatus> {
    lane.boundary("compose-request").await;
    let s = lane.parts();
    let history = lane.transcript();
    let rewritten = s
        .pre(Stage::ComposeRequest, || {
            ComposePre {
                iteration,
                messages: messages_json(history),
            }
            .into_value()
        })
        .await?;
    let messages = rewritten
        .as_ref()
        .and_then(|p| p.get("messages"))
        .and_then(messages_from)
        .unwrap_or_else(|| history.to_vec());
    let tools = offered_tools(lane, spec);
    let fragments = s.context_fragments(iteration).await;
    // What each skill is for, while the model can load them.
    let catalogue = tools
        .iter()
        .any(|t| t.name == crate::kernel::skills::SKILL_TOOL)
        .then(|| s.config.skills.catalogue())
        .flatten();
    let plan = s.turn.plan.then_some(crate::kernel::plan_mode::PLAN_PROMPT);
    let parts = [
        spec.system.as_deref(),
        fragments.as_deref(),
        catalogue,
        plan,
    ];
    let parts: Vec<&str> = parts.into_iter().flatten().collect();
    let base_system = (!parts.is_empty()).then(|| parts.join("\n\n"));
    let rewritten = s
        .post(Stage::ComposeRequest, || {
            ComposePost {
                system: base_system.clone(),
                messages: messages_json(&messages),
                tools: tools.iter().map(|t| t.name.clone()).collect(),
                model: s.roster.model.clone(),
            }
            .into_value()
        })
        .await?;
    let mut system = base_system;
    let mut messages = messages;
    if let Some(p) = rewritten {
        if let Some(m) = p.get("messages").and_then(messages_from) {
            messages = m;
        }
        match p.get("system") {
            Some(Value::String(s)) => system = Some(s.clone()),
            Some(Value::Null) => system = None,
            _ => {}
        }
    }
    Ok(Request {
        system,
        messages,
        tools,
        params: s.request_params(),
    })
}

/// The session's tools, narrowed to a stage's envelope, plus the stage's
/// completion tool (always offered).
fn offered_tools<L: Lane>(lane: &L, spec: &ActSpec) -> Vec<ToolDefinition> {
    let mut tools = lane.parts().roster.tools.definitions();
    if let Some(stage) = &spec.stage {
        tools.retain(|t| stage.in_envelope(&t.name));
    }
    if let Some(limit) = &lane.parts().turn.tools {
        tools.retain(|t| limit.allows(&t.name));
    }
    if let Some(c) = &spec.completion {
        tools.retain(|t| t.name != c.name);
        tools.push(ToolDefinition {
            name: c.name.clone(),
            description: c.description.clone(),
            parameters: c.schema.to_string(),
        });
    }
    tools
}
