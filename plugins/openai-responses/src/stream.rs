//! Responses SSE events to stream events. Every event names its `type`:
//! output items are announced (`response.output_item.added`), filled by
//! deltas keyed by `output_index` (text, function-call arguments,
//! reasoning summary text) and closed (`response.output_item.done`); the
//! response ends with `response.completed`, `response.incomplete` or
//! `response.failed`.

use std::collections::BTreeSet;

use stud_sdk::kinds::provider::{FinishReason, ToolCallDelta, ToolCallStart};
use stud_sdk::llm_http::{CONTEXT_OVERFLOW, is_context_overflow};
use stud_sdk::prelude::*;
use stud_sdk::sse::{Event, SseDecoder};
use stud_sdk::wit::stud::extension::provider_types::ThinkingDelta;
use stud_sdk::wit::stud::extension::types::ErrorClass;

#[derive(Default)]
pub struct ResponsesDecoder {
    /// Function calls started and not yet done, by output index.
    open_calls: BTreeSet<u32>,
    /// Function calls whose arguments came as deltas.
    args_streamed: BTreeSet<u32>,
    /// Reasoning items whose summary came as deltas, and the last summary
    /// part seen (parts are joined with a blank line).
    summary_streamed: BTreeSet<u32>,
    summary_part: Option<(u32, u64)>,
    called: bool,
    done: bool,
}

fn index(v: &Value) -> u32 {
    v.get("output_index").and_then(Value::as_u64).unwrap_or(0) as u32
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A `response.failed` or `error` event as a typed error: rate limits and
/// server errors may be retried, a context overflow compacts, the rest
/// are the request's fault.
fn failure(error: &Value) -> Error {
    let code = text(error, "code");
    let message = match text(error, "message") {
        "" => "the response failed without a message",
        m => m,
    };
    match code {
        "rate_limit_exceeded" => Error::transient(
            "rate-limited",
            format!("rate limited mid-response: {message}"),
        ),
        "server_error" | "internal_error" | "overloaded" => Error::transient(
            "server-error",
            format!("the API failed mid-response: {message}"),
        ),
        _ if code == "context_length_exceeded" || is_context_overflow(message) => Error::new(
            ErrorClass::Session,
            CONTEXT_OVERFLOW,
            format!("the conversation is too long for the model: {message}"),
        ),
        "" => Error::transient(
            "stream-error",
            format!("the API reported an error mid-response: {message}"),
        ),
        _ => Error::validation(
            "request-rejected",
            format!("the API rejected the request ({code}): {message}"),
        ),
    }
}

impl ResponsesDecoder {
    fn usage(response: &Value, out: &mut Vec<StreamEvent>) {
        let Some(u) = response.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let cached = n("/input_tokens_details/cached_tokens");
        out.push(StreamEvent::Usage(Usage {
            // The contract counts uncached prompt tokens only; reasoning
            // tokens are output tokens (priced so).
            input_tokens: n("/input_tokens").saturating_sub(cached),
            output_tokens: n("/output_tokens"),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }));
    }

    fn end(&mut self, finish: FinishReason, out: &mut Vec<StreamEvent>) {
        self.done = true;
        out.extend(
            std::mem::take(&mut self.open_calls)
                .into_iter()
                .map(StreamEvent::ToolCallEnd),
        );
        out.push(StreamEvent::Finish(finish));
    }

    fn item_added(&mut self, ev: &Value, out: &mut Vec<StreamEvent>) {
        let item = &ev["item"];
        if text(item, "type") == "function_call" {
            let i = index(ev);
            self.open_calls.insert(i);
            self.called = true;
            let id = match text(item, "call_id") {
                "" => format!("call_{i}"),
                id => id.to_string(),
            };
            out.push(StreamEvent::ToolCallStart(ToolCallStart {
                index: i,
                id,
                name: text(item, "name").to_string(),
            }));
        }
    }

    fn item_done(&mut self, ev: &Value, out: &mut Vec<StreamEvent>) {
        let item = &ev["item"];
        let i = index(ev);
        match text(item, "type") {
            "function_call" => {
                // Arguments that came whole rather than as deltas.
                let args = text(item, "arguments");
                if !self.args_streamed.contains(&i) && !args.is_empty() {
                    out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                        index: i,
                        arguments: args.to_string(),
                    }));
                }
                if self.open_calls.remove(&i) {
                    out.push(StreamEvent::ToolCallEnd(i));
                }
            }
            // The item goes back with the next request: it rides as the
            // signature that closes this thinking block.
            "reasoning" => {
                let summary = if self.summary_streamed.contains(&i) {
                    String::new()
                } else {
                    item.get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|s| text(s, "text"))
                        .collect::<Vec<_>>()
                        .join("\n\n")
                };
                let mut kept = json!({"id": text(item, "id")});
                if let Some(enc) = item.get("encrypted_content").filter(|v| v.is_string()) {
                    kept["encrypted_content"] = enc.clone();
                }
                out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                    text: summary,
                    signature: Some(kept.to_string()),
                }));
            }
            _ => {}
        }
    }

    fn event(&mut self, ev: &Value, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        match text(ev, "type") {
            kind @ ("response.output_text.delta"
            | "response.refusal.delta"
            | "response.function_call_arguments.delta"
            | "response.reasoning_summary_text.delta") => {
                let part = ev.get("summary_index").and_then(Value::as_u64).unwrap_or(0);
                self.delta(kind, index(ev), part, text(ev, "delta"), out);
            }
            "response.output_item.added" => self.item_added(ev, out),
            "response.output_item.done" => self.item_done(ev, out),
            "response.completed" => {
                Self::usage(&ev["response"], out);
                let finish = if self.called {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                self.end(finish, out);
            }
            "response.incomplete" => {
                let r = &ev["response"];
                Self::usage(r, out);
                let finish = match r
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                {
                    Some("max_output_tokens") => FinishReason::Length,
                    Some("content_filter") => FinishReason::ContentFilter,
                    _ => FinishReason::Other,
                };
                self.end(finish, out);
            }
            "response.failed" => {
                return Err(failure(&ev["response"]["error"]));
            }
            "error" => {
                // Either the error's fields at the top, or under `error`.
                let e = ev.get("error").filter(|e| e.is_object()).unwrap_or(ev);
                return Err(failure(e));
            }
            // Created, in progress, content parts, and events this
            // version does not use.
            _ => {}
        }
        Ok(())
    }
}

/// The fields of the events that come by the thousand (text, argument and
/// summary deltas), read without building a JSON tree; everything else is
/// read whole.
#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    output_index: u32,
    #[serde(default)]
    summary_index: u64,
}

impl ResponsesDecoder {
    /// A delta event, handled on the fast path; `false` when `data` is
    /// another kind of event.
    fn fast(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> bool {
        match serde_json::from_str::<Delta>(data) {
            Ok(Delta {
                kind,
                delta: Some(delta),
                output_index,
                summary_index,
            }) => self.delta(&kind, output_index, summary_index, &delta, out),
            _ => false,
        }
    }

    /// A text, arguments or summary delta (of item `i`, summary part
    /// `part`); `false` for another kind of event.
    fn delta(
        &mut self,
        kind: &str,
        i: u32,
        part: u64,
        delta: &str,
        out: &mut Vec<StreamEvent>,
    ) -> bool {
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                if !delta.is_empty() {
                    out.push(StreamEvent::TextDelta(delta.to_string()));
                }
            }
            "response.function_call_arguments.delta" => {
                self.args_streamed.insert(i);
                out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                    index: i,
                    arguments: delta.to_string(),
                }));
            }
            "response.reasoning_summary_text.delta" => {
                let mut t = String::new();
                if matches!(self.summary_part, Some((item, p)) if item == i && p != part) {
                    t.push_str("\n\n");
                }
                self.summary_part = Some((i, part));
                self.summary_streamed.insert(i);
                t.push_str(delta);
                out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                    text: t,
                    signature: None,
                }));
            }
            _ => return false,
        }
        true
    }
}

impl SseDecoder for ResponsesDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        if event.data.contains("\"delta\"") && self.fast(data, out) {
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data).map_err(|e| {
            Error::transient("protocol", format!("a stream event is not JSON: {e}"))
        })?;
        ResponsesDecoder::event(self, &ev, out)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn closed(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        Err(Error::transient(
            "stream-truncated",
            "the connection closed before the response was complete",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(lines: &[Value]) -> (Vec<StreamEvent>, Option<Error>) {
        let mut d = ResponsesDecoder::default();
        let mut out = Vec::new();
        for l in lines {
            if let Err(e) = ResponsesDecoder::event(&mut d, l, &mut out) {
                return (out, Some(e));
            }
        }
        (out, None)
    }

    #[test]
    fn a_failed_response_is_typed_by_its_code() {
        for (code, class, want) in [
            (
                "rate_limit_exceeded",
                ErrorClass::ProviderTransient,
                "rate-limited",
            ),
            (
                "server_error",
                ErrorClass::ProviderTransient,
                "server-error",
            ),
            (
                "context_length_exceeded",
                ErrorClass::Session,
                CONTEXT_OVERFLOW,
            ),
            ("invalid_prompt", ErrorClass::Validation, "request-rejected"),
        ] {
            let (_, e) = decode(&[
                json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": code, "message": "no"}}}),
            ]);
            let e = e.expect("an error");
            assert_eq!((e.class(), e.code()), (class, want), "{code}");
        }
    }

    #[test]
    fn arguments_that_come_whole_are_not_lost() {
        let (out, e) = decode(&[
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "read", "arguments": ""}}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}}),
        ]);
        assert!(e.is_none());
        assert!(
            matches!(&out[1], StreamEvent::ToolCallDelta(d) if d.arguments == "{\"path\":\"a\"}")
        );
        assert!(matches!(out[2], StreamEvent::ToolCallEnd(1)));
    }
}
