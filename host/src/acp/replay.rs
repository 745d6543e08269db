//! A kept conversation as ACP updates, for `session/load`.

use serde_json::{Value, json};

use super::updates::{text, title, tool_kind};

/// A kept conversation as the updates that show it again
/// (`session/load`): the person's and the model's text, thoughts, and
/// every tool call with its result.
pub fn replay(history: &[crate::runtime::domain::Message]) -> Vec<Value> {
    use crate::runtime::domain::{ContentPart, Role};
    let mut out = Vec::new();
    for m in history {
        for part in &m.content {
            match part {
                ContentPart::Text(t) => out.push(json!({
                    "sessionUpdate": if m.role == Role::User { "user_message_chunk" } else { "agent_message_chunk" },
                    "content": text(t),
                })),
                ContentPart::Thinking(t) => {
                    out.push(json!({"sessionUpdate": "agent_thought_chunk", "content": text(&t.text)}))
                }
                ContentPart::ToolCall(c) => {
                    let args: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::Null);
                    out.push(json!({
                        "sessionUpdate": "tool_call",
                        "toolCallId": c.id,
                        "title": title(&c.name, &args),
                        "kind": tool_kind(&c.name),
                        "status": "pending",
                        "rawInput": args,
                    }))
                }
                ContentPart::ToolResult(r) => out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": r.call_id,
                    "status": if r.is_error { "failed" } else { "completed" },
                    "content": [{"type": "content", "content": text(&crate::kernel::payloads::result_text(&r.content))}],
                })),
                ContentPart::Image(_) => {}
            }
        }
    }
    out
}
