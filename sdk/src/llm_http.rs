//! Helpers for providers that talk to LLM APIs over HTTP: send a JSON
//! request, and turn an error response into the runtime's error classes so
//! the kernel knows what to do (retry rate limits and overload with the
//! server's Retry-After, stop on bad keys, hand context overflow to
//! compaction).

use serde_json::Value;

use crate::Error;
use crate::host::http::{self, Header, Request, Response};

/// Error code of a conversation too long for the model; the kernel's
/// compaction reacts to it.
pub const CONTEXT_OVERFLOW: &str = "context-overflow";
/// Most bytes of an error body read for its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// POST `body` as JSON to `url`. A non-2xx answer becomes a classified
/// [`Error`]; `key_hint` tells the user how to fix a rejected key (e.g.
/// "set OPENAI_API_KEY").
pub fn post_json(
    url: &str,
    headers: Vec<Header>,
    body: &Value,
    key_hint: &str,
) -> Result<Response, Error> {
    let mut headers = headers;
    headers.push(header("content-type", "application/json"));
    let response = http::send(&Request {
        method: "POST".into(),
        url: url.into(),
        headers,
        body: Some(body.to_string().into_bytes()),
        timeout_ms: None,
    })?;
    let status = response.status();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let retry_after_ms = retry_after_ms(&response.headers());
    let text = read_capped(&response);
    Err(classify(
        status,
        retry_after_ms,
        &error_message(&text),
        key_hint,
    ))
}

/// A header.
pub fn header(name: &str, value: &str) -> Header {
    Header {
        name: name.into(),
        value: value.into(),
    }
}

fn read_capped(response: &Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.next_chunk() {
        body.extend_from_slice(&chunk);
        if body.len() > ERROR_BODY_LIMIT {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The human part of an error body: `error.message` (OpenAI, Anthropic,
/// Gemini all nest it so), a top-level `message`, or the text itself.
pub fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        let v = match v {
            Value::Array(items) => items.first()?,
            other => other,
        };
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = found.unwrap_or_else(|| body.trim().to_string());
    text.chars().take(500).collect()
}

/// `retry-after-ms` or `retry-after` (seconds) from the response headers.
pub fn retry_after_ms(headers: &[Header]) -> Option<u64> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.trim().to_string())
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(ms.max(0.0) as u64);
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|s| (s.max(0.0) * 1000.0) as u64)
}

/// Whether an error message says the conversation is too long.
pub fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context length",
        "context_length_exceeded",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "input token count",
        "reduce the length",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// An HTTP error status as a runtime error.
pub fn classify(status: u16, retry_after_ms: Option<u64>, message: &str, key_hint: &str) -> Error {
    let with_retry = |e: Error| match retry_after_ms {
        Some(ms) => e.with_context(serde_json::json!({"status": status, "retry_after_ms": ms})),
        None => e.with_context(serde_json::json!({"status": status})),
    };
    match status {
        401 | 403 => Error::validation(
            "auth",
            format!("the API rejected the key (HTTP {status}: {message}); {key_hint}"),
        )
        .with_context(serde_json::json!({"status": status})),
        429 => with_retry(Error::transient(
            "rate-limited",
            format!("rate limited (HTTP 429): {message}"),
        )),
        408 => with_retry(Error::transient("timeout", format!("HTTP 408: {message}"))),
        529 => with_retry(Error::transient(
            "overloaded",
            format!("the API is overloaded (HTTP 529): {message}"),
        )),
        500..=599 => with_retry(Error::transient(
            "server-error",
            format!("the API failed (HTTP {status}): {message}"),
        )),
        _ if is_context_overflow(message) => Error::new(
            crate::wit::stud::extension::types::ErrorClass::Session,
            CONTEXT_OVERFLOW,
            format!("the conversation is too long for the model (HTTP {status}): {message}"),
        )
        .with_context(serde_json::json!({"status": status})),
        404 => Error::validation(
            "not-found",
            format!("HTTP 404: {message}; check the model id and the provider's baseUrl"),
        ),
        _ => Error::validation(
            "request-rejected",
            format!("the API rejected the request (HTTP {status}): {message}"),
        )
        .with_context(serde_json::json!({"status": status})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_statuses() {
        assert_eq!(
            classify(429, Some(10), "slow down", "").code(),
            "rate-limited"
        );
        assert_eq!(classify(401, None, "bad key", "set X").code(), "auth");
        assert!(
            classify(401, None, "bad key", "set X")
                .message()
                .contains("set X")
        );
        assert_eq!(classify(503, None, "", "").code(), "server-error");
        assert_eq!(
            classify(
                400,
                None,
                "This model's maximum context length is 8192 tokens",
                ""
            )
            .code(),
            CONTEXT_OVERFLOW
        );
        assert_eq!(
            classify(400, None, "bad field", "").code(),
            "request-rejected"
        );
    }

    #[test]
    fn reads_messages_and_retry_after() {
        assert_eq!(error_message(r#"{"error":{"message":"boom"}}"#), "boom");
        assert_eq!(error_message(r#"[{"error":{"message":"g"}}]"#), "g");
        assert_eq!(error_message("plain"), "plain");
        assert_eq!(retry_after_ms(&[header("Retry-After", "2")]), Some(2000));
        assert_eq!(
            retry_after_ms(&[header("retry-after-ms", "150")]),
            Some(150)
        );
        assert_eq!(retry_after_ms(&[]), None);
    }
}
