//! The `generateContent` body: `contents` alternate `user` and `model`;
//! tool calls are `functionCall` parts and results `functionResponse`
//! parts (matched by name, as Gemini has no call ids); a thought
//! signature goes back on the first function call it came with.

use stud_sdk::kinds::provider::ThinkingLevel;
use stud_sdk::prelude::*;
use stud_sdk::wit::stud::extension::types::{Image, ImageSource};

fn image_part(image: &Image) -> Value {
    match &image.source {
        ImageSource::Base64(data) => {
            json!({"inlineData": {"mimeType": image.media_type, "data": data}})
        }
        ImageSource::Url(url) => {
            json!({"fileData": {"mimeType": image.media_type, "fileUri": url}})
        }
    }
}

fn parts(content: &[ContentPart]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    let mut signature: Option<String> = None;
    for p in content {
        match p {
            ContentPart::Text(t) if t.is_empty() => {}
            ContentPart::Text(t) => out.push(json!({"text": t})),
            ContentPart::Image(i) => out.push(image_part(i)),
            ContentPart::Thinking(t) => signature = t.signature.clone(),
            ContentPart::ToolCall(c) => {
                let args: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
                let mut part = json!({"functionCall": {"name": c.name, "args": args}});
                if let Some(sig) = signature.take() {
                    part["thoughtSignature"] = json!(sig);
                }
                out.push(part);
            }
            ContentPart::ToolResult(r) => {
                let text: Vec<String> = r
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        ResultPart::Text(t) => Some(t.clone()),
                        ResultPart::Image(_) => None,
                    })
                    .collect();
                let key = if r.is_error { "error" } else { "content" };
                out.push(json!({"functionResponse": {"name": r.name, "response": {key: text.join("\n")}}}));
            }
        }
    }
    Ok(out)
}

pub fn body(req: &ProviderRequest) -> Result<Value, Error> {
    let mut contents: Vec<Value> = Vec::new();
    for m in &req.messages {
        let role = match m.role {
            Role::Assistant => "model",
            Role::User | Role::Tool | Role::System => "user",
        };
        let p = parts(&m.content)?;
        if p.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(items) = last["parts"].as_array_mut() {
                    items.extend(p);
                }
            }
            _ => contents.push(json!({"role": role, "parts": p})),
        }
    }
    let mut body = json!({"contents": contents});
    if let Some(system) = req.system.as_ref().filter(|s| !s.is_empty()) {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !req.tools.is_empty() {
        let mut decls = Vec::new();
        for t in &req.tools {
            let schema: Value = serde_json::from_str(&t.parameters)?;
            decls.push(json!({"name": t.name, "description": t.description, "parametersJsonSchema": schema}));
        }
        body["tools"] = json!([{"functionDeclarations": decls}]);
    }
    let mut config = json!({});
    if let Some(max) = req.params.max_tokens {
        config["maxOutputTokens"] = json!(max);
    }
    if let Some(t) = req.params.temperature {
        config["temperature"] = json!(t);
    }
    let budget = match req.params.thinking {
        ThinkingLevel::Off => None,
        ThinkingLevel::Low => Some(1024),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(24_576),
    };
    if let Some(budget) = budget {
        config["thinkingConfig"] = json!({"thinkingBudget": budget, "includeThoughts": true});
    }
    if config.as_object().is_some_and(|c| !c.is_empty()) {
        body["generationConfig"] = config;
    }
    Ok(body)
}
