//! JSON views of the conversation for hooks and events, and the way back
//! for what transforms may change. The shapes are documented in
//! docs/hooks.md; they are part of the contract hooks see.

use serde_json::{Value, json};
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::CallView;

use crate::runtime::domain::{
    ContentPart, Image, ImageSource, Message, ResultPart, Role, Thinking, ToolCall, ToolResult,
};

pub fn role_str(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn role_from(s: &str) -> Option<Role> {
    Some(match s {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => return None,
    })
}

fn image_json(i: &Image) -> Value {
    match &i.source {
        ImageSource::Base64(b) => json!({"type": "image", "media_type": i.media_type, "base64": b}),
        ImageSource::Url(u) => json!({"type": "image", "media_type": i.media_type, "url": u}),
    }
}

fn image_from(v: &Value) -> Option<Image> {
    let media_type = v.get("media_type")?.as_str()?.to_string();
    let source = match (
        v.get("base64").and_then(Value::as_str),
        v.get("url").and_then(Value::as_str),
    ) {
        (Some(b), _) => ImageSource::Base64(b.to_string()),
        (None, Some(u)) => ImageSource::Url(u.to_string()),
        _ => return None,
    };
    Some(Image { media_type, source })
}

pub fn result_parts_json(parts: &[ResultPart]) -> Vec<Value> {
    parts
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => json!({"type": "text", "text": t}),
            ResultPart::Image(i) => image_json(i),
        })
        .collect()
}

pub fn result_parts_from(v: &Value) -> Option<Vec<ResultPart>> {
    v.as_array()?
        .iter()
        .map(|p| match p.get("type")?.as_str()? {
            "text" => Some(ResultPart::Text(p.get("text")?.as_str()?.to_string())),
            "image" => image_from(p).map(ResultPart::Image),
            _ => None,
        })
        .collect()
}

/// Text of result parts joined with newlines.
pub fn result_text(parts: &[ResultPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ResultPart::Text(t) => Some(t.as_str()),
            ResultPart::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A call as hooks see it (`stud_protocol::hook_payloads`).
pub fn call_view(c: &ToolCall) -> CallView {
    CallView {
        id: c.id.clone(),
        name: c.name.clone(),
        arguments: serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments.clone())),
    }
}

pub fn call_json(c: &ToolCall) -> Value {
    serde_json::to_value(call_view(c)).unwrap_or(Value::Null)
}

pub fn tool_result_json(r: &ToolResult) -> Value {
    json!({"call_id": r.call_id, "name": r.name, "content": result_parts_json(&r.content), "is_error": r.is_error})
}

pub fn message_json(m: &Message) -> Value {
    json!({"role": role_str(m.role), "content": content_json(m)})
}

fn content_json(m: &Message) -> Vec<Value> {
    m.content
        .iter()
        .map(|p| match p {
            ContentPart::Text(t) => json!({"type": "text", "text": t}),
            ContentPart::Image(i) => image_json(i),
            ContentPart::Thinking(t) => {
                json!({"type": "thinking", "text": t.text, "signature": t.signature})
            }
            ContentPart::ToolCall(c) => {
                let mut v = call_json(c);
                v["type"] = json!("tool_call");
                v
            }
            ContentPart::ToolResult(r) => {
                let mut v = tool_result_json(r);
                v["type"] = json!("tool_result");
                v
            }
        })
        .collect()
}

/// `message.appended` for `m` (in a stage execution's transcript when
/// `execution_id` is set).
pub fn message_appended(m: &Message, execution_id: Option<&str>) -> KernelEvent {
    KernelEvent::MessageAppended {
        role: role_str(m.role).into(),
        content: content_json(m),
        execution_id: execution_id.map(str::to_string),
    }
}

pub fn message_from(v: &Value) -> Option<Message> {
    let role = role_from(v.get("role")?.as_str()?)?;
    let content = v
        .get("content")?
        .as_array()?
        .iter()
        .map(|p| {
            Some(match p.get("type")?.as_str()? {
                "text" => ContentPart::Text(p.get("text")?.as_str()?.to_string()),
                "image" => ContentPart::Image(image_from(p)?),
                "thinking" => ContentPart::Thinking(Thinking {
                    text: p.get("text")?.as_str()?.to_string(),
                    signature: p
                        .get("signature")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                }),
                "tool_call" => ContentPart::ToolCall(ToolCall {
                    id: p.get("id")?.as_str()?.to_string(),
                    name: p.get("name")?.as_str()?.to_string(),
                    arguments: p.get("arguments")?.to_string(),
                }),
                "tool_result" => ContentPart::ToolResult(ToolResult {
                    call_id: p.get("call_id")?.as_str()?.to_string(),
                    name: p.get("name")?.as_str()?.to_string(),
                    content: result_parts_from(p.get("content")?)?,
                    is_error: p.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                }),
                _ => return None,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Message { role, content })
}

pub fn messages_json(ms: &[Message]) -> Vec<Value> {
    ms.iter().map(message_json).collect()
}

pub fn messages_from(v: &Value) -> Option<Vec<Message>> {
    v.as_array()?.iter().map(message_from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let m = Message {
            role: Role::Assistant,
            content: vec![
                ContentPart::Text("hi".into()),
                ContentPart::Thinking(Thinking {
                    text: "hmm".into(),
                    signature: Some("sig".into()),
                }),
                ContentPart::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: r#"{"path":"a"}"#.into(),
                }),
                ContentPart::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: "read".into(),
                    content: vec![ResultPart::Text("x".into())],
                    is_error: true,
                }),
            ],
        };
        let back = message_from(&message_json(&m)).expect("round trip");
        assert_eq!(message_json(&back), message_json(&m));
    }
}
