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
pub fn digests(request: &Request) -> (String, u64, RequestParts) {
    let value = canonical_value(request);
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    // 64 bits name which part differs; the whole request's digest is
    // the full 256.
    let part = |k: &str| {
        let d = Sha256::digest(serde_json::to_vec(&value[k]).unwrap_or_default());
        hex::encode(&d[..8])
    };
    let parts = RequestParts {
        system: part("system"),
        messages: part("messages"),
        tools: part("tools"),
        params: part("params"),
    };
    (
        hex::encode(Sha256::digest(&bytes)),
        bytes.len() as u64,
        parts,
    )
}
