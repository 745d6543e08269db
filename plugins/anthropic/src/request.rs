//! The Messages request body. The API wants strictly alternating
//! user/assistant turns, so consecutive messages of one side are merged
//! (tool results are user content). With cache hints, breakpoints go on
//! the system prompt, the last tool and the last user block: the prefix
//! that repeats between requests.

use stud_sdk::kinds::provider::ThinkingLevel;
use stud_sdk::prelude::*;
use stud_sdk::wit::stud::extension::types::{Image, ImageSource};

fn image_block(image: &Image) -> Value {
    match &image.source {
        ImageSource::Base64(data) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": data}})
        }
        ImageSource::Url(url) => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

fn blocks(parts: &[ContentPart]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for p in parts {
        out.push(match p {
            ContentPart::Text(t) if t.is_empty() => continue,
            ContentPart::Text(t) => json!({"type": "text", "text": t}),
            ContentPart::Image(i) => image_block(i),
            // Thinking without a signature cannot be sent back.
            ContentPart::Thinking(t) => match &t.signature {
                Some(sig) => match sig.strip_prefix(crate::REDACTED_THINKING) {
                    Some(data) => json!({"type": "redacted_thinking", "data": data}),
                    None => json!({"type": "thinking", "thinking": t.text, "signature": sig}),
                },
                None => continue,
            },
            ContentPart::ToolCall(c) => {
                let input: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
                json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
            }
            ContentPart::ToolResult(r) => {
                let content: Vec<Value> = r
                    .content
                    .iter()
                    .map(|c| match c {
                        ResultPart::Text(t) => json!({"type": "text", "text": t}),
                        ResultPart::Image(i) => image_block(i),
                    })
                    .collect();
                json!({"type": "tool_result", "tool_use_id": r.call_id, "content": content, "is_error": r.is_error})
            }
        });
    }
    Ok(out)
}

pub fn messages(req: &ProviderRequest) -> Result<Vec<Value>, Error> {
    let mut out: Vec<Value> = Vec::new();
    for m in &req.messages {
        let role = match m.role {
            Role::Assistant => "assistant",
            // System text inside the history goes as user text.
            Role::User | Role::Tool | Role::System => "user",
        };
        let content = blocks(&m.content)?;
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(items) = last["content"].as_array_mut() {
                    items.extend(content);
                }
            }
            _ => out.push(json!({"role": role, "content": content})),
        }
    }
    Ok(out)
}

fn thinking_budget(level: ThinkingLevel) -> Option<u32> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(24_576),
    }
}

pub fn body(req: &ProviderRequest, max_tokens: u32) -> Result<Value, Error> {
    let cache = req.params.cache_hints;
    let mut messages = messages(req)?;
    if cache
        && let Some(last_user) = messages.iter_mut().rev().find(|m| m["role"] == "user")
        && let Some(block) = last_user["content"]
            .as_array_mut()
            .and_then(|c| c.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut body = json!({
        "model": req.params.model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": true,
    });
    if let Some(system) = req.system.as_ref().filter(|s| !s.is_empty()) {
        let mut block = json!({"type": "text", "text": system});
        if cache {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        body["system"] = json!([block]);
    }
    if !req.tools.is_empty() {
        let mut tools = Vec::new();
        for t in &req.tools {
            let schema: Value = serde_json::from_str(&t.parameters)?;
            tools.push(
                json!({"name": t.name, "description": t.description, "input_schema": schema}),
            );
        }
        if cache && let Some(last) = tools.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        body["tools"] = Value::Array(tools);
    }
    if let Some(budget) = thinking_budget(req.params.thinking) {
        // The budget must stay below max_tokens.
        let budget = budget.min(max_tokens.saturating_sub(1)).max(1024);
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    } else if let Some(t) = req.params.temperature {
        // Temperature cannot be combined with thinking.
        body["temperature"] = json!(t);
    }
    Ok(body)
}
