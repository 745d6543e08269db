//! What the provider was sent, as a digest in the session's record
//! (`provider.request.sent`): a replay compares a request it would send
//! with the one recorded, byte for byte, without keeping every request
//! whole. The bytes hashed are a canonical JSON form of the request
//! (system prompt, messages as the session stores them, tools, model
//! parameters), independent of any provider's wire format and of stud's
//! internal types' debug output.

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::payloads::messages_json;
use crate::runtime::domain::{Request, ThinkingLevel};
use stud_protocol::replay_trace::RequestParts;

/// The canonical bytes of `request`.
pub fn canonical(request: &Request) -> Vec<u8> {
    serde_json::to_vec(&canonical_value(request)).unwrap_or_default()
}

/// The canonical form as a value (`system`, `messages`, `tools`, `params`).
fn canonical_value(request: &Request) -> Value {
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            // The schema as a value, so its key order is the one serde
            // gives every parse of it (text that is not JSON stays text).
            let parameters = serde_json::from_str::<Value>(&t.parameters)
                .unwrap_or_else(|_| Value::String(t.parameters.clone()));
            json!({"name": t.name, "description": t.description, "parameters": parameters})
        })
        .collect();
    let p = &request.params;
    let thinking = match p.thinking {
        ThinkingLevel::Off => "off",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
    };
    json!({
        "system": request.system,
        "messages": messages_json(&request.messages),
        "tools": tools,
        "params": {
            "model": p.model,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "thinking": thinking,
            "cache_hints": p.cache_hints,
        },
    })
}

/// The digest and size of `request`'s canonical bytes.
pub fn digest(request: &Request) -> (String, u64) {
    let bytes = canonical(request);
    (hex::encode(Sha256::digest(&bytes)), bytes.len() as u64)
}

/// The digest and size of the whole, and a short digest of each part.
/// Each part is serialized once: the whole's digest is taken over the
/// same bytes [`canonical`] writes (the object's members in its order,
/// compact), fed piece by piece.
pub fn digests(request: &Request) -> (String, u64, RequestParts) {
    let value = canonical_value(request);
    let mut whole = Sha256::new();
    let mut size = 0u64;
    let mut feed = |bytes: &[u8]| {
        whole.update(bytes);
        size += bytes.len() as u64;
    };
    let mut parts = RequestParts::default();
    feed(b"{");
    if let Value::Object(map) = &value {
        for (i, (key, part)) in map.iter().enumerate() {
            if i > 0 {
                feed(b",");
            }
            feed(&serde_json::to_vec(key).unwrap_or_default());
            feed(b":");
            let bytes = serde_json::to_vec(part).unwrap_or_default();
            feed(&bytes);
            // 64 bits name which part differs; the whole request's
            // digest is the full 256.
            let short = hex::encode(&Sha256::digest(&bytes)[..8]);
            match key.as_str() {
                "system" => parts.system = short,
                "messages" => parts.messages = short,
                "tools" => parts.tools = short,
                _ => parts.params = short,
            }
        }
    }
    feed(b"}");
    (hex::encode(whole.finalize()), size, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::domain::{ContentPart, Message, RequestParams, Role, ToolDefinition};

    #[test]
    fn the_whole_digest_fed_by_parts_is_the_digest_of_the_canonical_bytes() {
        let request = Request {
            system: Some("be \"brief\"\n".into()),
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentPart::Text("hello ünïcode".into())],
            }],
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: r#"{"type":"object","properties":{"path":{"type":"string"}}}"#.into(),
            }],
            params: RequestParams {
                model: "m".into(),
                max_tokens: Some(100),
                temperature: None,
                thinking: ThinkingLevel::Off,
                cache_hints: false,
            },
        };
        let bytes = canonical(&request);
        let (sha, size, parts) = digests(&request);
        assert_eq!(sha, hex::encode(Sha256::digest(&bytes)));
        assert_eq!(size, bytes.len() as u64);
        assert_eq!(digest(&request), (sha, size));
        let mut other = request.clone();
        other.system = Some("be long".into());
        let (_, _, changed) = digests(&other);
        assert_eq!(changed.differing(&parts), vec!["system prompt"]);
    }
}
