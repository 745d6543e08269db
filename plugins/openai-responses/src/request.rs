//! The Responses request body: the history as input items (messages,
//! `function_call`, `function_call_output`, `reasoning`), the tools as
//! functions, and the reasoning and storage settings.

use stud_sdk::kinds::provider::ThinkingLevel;
use stud_sdk::llm_parts::{image_url, result_text, text_of};
use stud_sdk::prelude::*;

use crate::Options;

/// A reasoning item as it came (its signature), sent back as is; with
/// `store`, by id only.
fn reasoning_item(text: &str, signature: &str, store: bool) -> Option<Value> {
    let item: Value = serde_json::from_str(signature).ok()?;
    let id = item.get("id").and_then(Value::as_str)?;
    let summary = if text.is_empty() {
        json!([])
    } else {
        json!([{"type": "summary_text", "text": text}])
    };
    let mut out = json!({"type": "reasoning", "id": id, "summary": summary});
    if !store && let Some(enc) = item.get("encrypted_content").filter(|v| v.is_string()) {
        out["encrypted_content"] = enc.clone();
    }
    Some(out)
}

/// Our messages as input items, in order.
pub fn input(req: &ProviderRequest, options: &Options) -> Vec<Value> {
    let mut out = Vec::new();
    for m in &req.messages {
        match m.role {
            Role::System => out.push(json!({"role": "developer", "content": text_of(&m.content)})),
            Role::User | Role::Tool => {
                let mut content = Vec::new();
                for p in &m.content {
                    match p {
                        ContentPart::ToolResult(r) => out.push(json!({
                            "type": "function_call_output",
                            "call_id": r.call_id,
                            "output": result_text(&r.content),
                        })),
                        ContentPart::Text(t) => {
                            content.push(json!({"type": "input_text", "text": t}))
                        }
                        ContentPart::Image(i) => {
                            content.push(json!({"type": "input_image", "image_url": image_url(i)}))
                        }
                        _ => {}
                    }
                }
                if !content.is_empty() {
                    out.push(json!({"role": "user", "content": content}));
                }
            }
            Role::Assistant => {
                for p in &m.content {
                    match p {
                        // Thinking without its item (another provider's)
                        // cannot be sent back.
                        ContentPart::Thinking(t) => {
                            if let Some(item) = t
                                .signature
                                .as_deref()
                                .and_then(|s| reasoning_item(&t.text, s, options.store))
                            {
                                out.push(item);
                            }
                        }
                        ContentPart::Text(t) if !t.is_empty() => out.push(json!({
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": t}],
                        })),
                        ContentPart::ToolCall(c) => out.push(json!({
                            "type": "function_call",
                            "call_id": c.id,
                            "name": c.name,
                            "arguments": c.arguments,
                        })),
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

/// The body; `reasons`: the model produces reasoning items (their
/// encrypted content is asked for, so they can be passed back).
pub fn body(req: &ProviderRequest, options: &Options, reasons: bool) -> Result<Value, Error> {
    let mut body = json!({
        "model": req.params.model,
        "input": input(req, options),
        "stream": true,
        "store": options.store,
    });
    if let Some(system) = req.system.as_ref().filter(|s| !s.is_empty()) {
        body["instructions"] = json!(system);
    }
    if !req.tools.is_empty() {
        let tools: Result<Vec<Value>, Error> = req
            .tools
            .iter()
            .map(|t| {
                let parameters: Value = serde_json::from_str(&t.parameters)?;
                Ok(json!({"type": "function", "name": t.name, "description": t.description, "parameters": parameters, "strict": false}))
            })
            .collect();
        body["tools"] = Value::Array(tools?);
        body["parallel_tool_calls"] = json!(true);
    }
    if let Some(max) = req.params.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(t) = req.params.temperature {
        body["temperature"] = json!(t);
    }
    if reasons {
        if !options.store {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        let effort = match req.params.thinking {
            ThinkingLevel::Off => None,
            ThinkingLevel::Low => Some("low"),
            ThinkingLevel::Medium => Some("medium"),
            ThinkingLevel::High => Some("high"),
        };
        let mut reasoning = json!({});
        if let Some(effort) = effort {
            reasoning["effort"] = json!(effort);
        }
        if let Some(summary) = &options.summary {
            reasoning["summary"] = json!(summary);
        }
        body["reasoning"] = reasoning;
    }
    Ok(body)
}
