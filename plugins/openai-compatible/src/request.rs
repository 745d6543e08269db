//! The Chat Completions request body.

use stud_sdk::kinds::provider::ThinkingLevel;
use stud_sdk::llm_parts::{image_url, result_text, text_of};
use stud_sdk::prelude::*;

use crate::Compat;

fn user_content(parts: &[ContentPart]) -> Value {
    let has_image = parts.iter().any(|p| matches!(p, ContentPart::Image(_)));
    if !has_image {
        return Value::String(text_of(parts));
    }
    let items: Vec<Value> = parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text(t) => Some(json!({"type": "text", "text": t})),
            ContentPart::Image(i) => {
                Some(json!({"type": "image_url", "image_url": {"url": image_url(i)}}))
            }
            _ => None,
        })
        .collect();
    Value::Array(items)
}

/// Our messages in Chat Completions form: tool results become one `tool`
/// message each; thinking is not sent back (the API does not take it).
pub fn messages(req: &ProviderRequest, compat: &Compat) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = req.system.as_ref().filter(|s| !s.is_empty()) {
        out.push(json!({"role": compat.system_role, "content": system}));
    }
    for m in &req.messages {
        match m.role {
            Role::System => {
                out.push(json!({"role": compat.system_role, "content": text_of(&m.content)}))
            }
            Role::User => {
                let results: Vec<&ContentPart> = m
                    .content
                    .iter()
                    .filter(|p| matches!(p, ContentPart::ToolResult(_)))
                    .collect();
                push_results(&mut out, &results);
                if m.content
                    .iter()
                    .any(|p| matches!(p, ContentPart::Text(_) | ContentPart::Image(_)))
                {
                    out.push(json!({"role": "user", "content": user_content(&m.content)}));
                }
            }
            Role::Tool => {
                let results: Vec<&ContentPart> = m.content.iter().collect();
                push_results(&mut out, &results);
            }
            Role::Assistant => {
                let text = text_of(&m.content);
                let calls: Vec<Value> = m
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(c) => Some(json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        })),
                        _ => None,
                    })
                    .collect();
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

fn push_results(out: &mut Vec<Value>, parts: &[&ContentPart]) {
    for p in parts {
        if let ContentPart::ToolResult(r) = p {
            out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": result_text(&r.content)}));
        }
    }
}

pub fn body(req: &ProviderRequest, compat: &Compat) -> Result<Value, Error> {
    let mut body = json!({
        "model": req.params.model,
        "messages": messages(req, compat),
        "stream": true,
    });
    if compat.include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !req.tools.is_empty() {
        let tools: Result<Vec<Value>, Error> = req
            .tools
            .iter()
            .map(|t| {
                let parameters: Value = serde_json::from_str(&t.parameters)?;
                Ok(json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": parameters}}))
            })
            .collect();
        body["tools"] = Value::Array(tools?);
    }
    if let Some(max) = req.params.max_tokens {
        body[compat.max_tokens_field.as_str()] = json!(max);
    }
    if let Some(t) = req.params.temperature {
        body["temperature"] = json!(t);
    }
    let effort = match req.params.thinking {
        ThinkingLevel::Off => None,
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
    };
    if let Some(effort) = effort {
        body["reasoning_effort"] = json!(effort);
    }
    Ok(body)
}
