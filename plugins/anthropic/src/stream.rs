//! Messages SSE events to stream events: `message_start` (input and cache
//! usage), `content_block_start/delta/stop` (text, thinking with its
//! signature, tool use with `input_json_delta`), `message_delta` (stop
//! reason, output usage), `message_stop`, `ping`, and `error` (overloaded,
//! rate limits: transient).

use stud_sdk::kinds::provider::{FinishReason, ToolCallDelta, ToolCallStart};
use stud_sdk::llm_http::{CONTEXT_OVERFLOW, is_context_overflow};
use stud_sdk::prelude::*;
use stud_sdk::sse::{Event, SseDecoder};
use stud_sdk::wit::stud::extension::provider_types::ThinkingDelta;

#[derive(Default)]
pub struct MessageDecoder {
    finish: Option<FinishReason>,
    done: bool,
}

impl MessageDecoder {
    fn handle(
        &mut self,
        kind: &str,
        data: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), Error> {
        let n = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                let u = data
                    .pointer("/message/usage")
                    .cloned()
                    .unwrap_or(Value::Null);
                out.push(StreamEvent::Usage(Usage {
                    input_tokens: n(&u, "/input_tokens"),
                    output_tokens: 0,
                    cache_read_tokens: n(&u, "/cache_read_input_tokens"),
                    cache_write_tokens: n(&u, "/cache_creation_input_tokens"),
                }));
            }
            "content_block_start" => {
                let index = n(data, "/index") as u32;
                let block = &data["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") => out.push(StreamEvent::ToolCallStart(ToolCallStart {
                        index,
                        id: block["id"].as_str().unwrap_or_default().to_string(),
                        name: block["name"].as_str().unwrap_or_default().to_string(),
                    })),
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(StreamEvent::TextDelta(t.to_string()));
                        }
                    }
                    // Encrypted reasoning: nothing to show, but it must go
                    // back unchanged; it travels as an opaque signature.
                    Some("redacted_thinking") => {
                        out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                            text: String::new(),
                            signature: Some(format!(
                                "{}{}",
                                crate::REDACTED_THINKING,
                                block["data"].as_str().unwrap_or_default()
                            )),
                        }))
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = n(data, "/index") as u32;
                let delta = &data["delta"];
                let s = |k: &str| delta[k].as_str().unwrap_or_default().to_string();
                match delta["type"].as_str() {
                    Some("text_delta") => out.push(StreamEvent::TextDelta(s("text"))),
                    Some("input_json_delta") => {
                        out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                            index,
                            arguments: s("partial_json"),
                        }))
                    }
                    Some("thinking_delta") => out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                        text: s("thinking"),
                        signature: None,
                    })),
                    Some("signature_delta") => {
                        out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                            text: String::new(),
                            signature: Some(s("signature")),
                        }))
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                // Only tool blocks need an end marker; the kernel ignores
                // ends of indexes it never saw start.
                out.push(StreamEvent::ToolCallEnd(n(data, "/index") as u32));
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.finish = Some(match reason {
                        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
                        "tool_use" => FinishReason::ToolCalls,
                        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
                        "refusal" => FinishReason::ContentFilter,
                        _ => FinishReason::Other,
                    });
                }
                if let Some(u) = data.get("usage") {
                    out.push(StreamEvent::Usage(Usage {
                        input_tokens: 0,
                        output_tokens: n(u, "/output_tokens"),
                        cache_read_tokens: 0,
                        cache_write_tokens: 0,
                    }));
                }
            }
            "message_stop" => {
                self.done = true;
                out.push(StreamEvent::Finish(
                    self.finish.unwrap_or(FinishReason::Stop),
                ));
            }
            "error" => {
                let kind = data
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                return Err(match kind {
                    "overloaded_error" => Error::transient(
                        "overloaded",
                        format!("Anthropic is overloaded: {message}"),
                    ),
                    "rate_limit_error" => {
                        Error::transient("rate-limited", format!("rate limited: {message}"))
                    }
                    "api_error" => {
                        Error::transient("server-error", format!("Anthropic failed: {message}"))
                    }
                    _ if is_context_overflow(message) => {
                        Error::new(ErrorClass::Session, CONTEXT_OVERFLOW, message.to_string())
                    }
                    _ => Error::validation("request-rejected", format!("{kind}: {message}")),
                });
            }
            // `ping` and events added to the API later.
            _ => {}
        }
        Ok(())
    }
}

impl SseDecoder for MessageDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|e| Error::transient("protocol", format!("an event is not JSON: {e}")))?;
        let kind = if event.event.is_empty() || event.event == "message" {
            data["type"].as_str().unwrap_or_default().to_string()
        } else {
            event.event.clone()
        };
        self.handle(&kind, &data, out)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn closed(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        Err(Error::transient(
            "stream-truncated",
            "the connection closed before message_stop",
        ))
    }
}
