//! Streamed `GenerateContentResponse` objects to stream events. Text and
//! thoughts arrive as parts; a function call arrives whole in one part, so
//! it becomes start, one argument delta and end at once. Usage is
//! cumulative in every chunk; the last one is reported at the end.

use stud_sdk::kinds::provider::{FinishReason, ToolCallDelta, ToolCallStart};
use stud_sdk::llm_http::{CONTEXT_OVERFLOW, classify, is_context_overflow};
use stud_sdk::prelude::*;
use stud_sdk::sse::{Event, SseDecoder};
use stud_sdk::wit::stud::extension::provider_types::ThinkingDelta;

/// Gemini has no end marker: the body ends after the chunk with a finish
/// reason.
#[derive(Default)]
pub struct GeminiDecoder {
    calls: u32,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
}

impl GeminiDecoder {
    fn chunk(&mut self, data: &Value, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        if let Some(err) = data.get("error") {
            let message = err["message"].as_str().unwrap_or("unknown error");
            let status = err["code"].as_u64().unwrap_or(500) as u16;
            if is_context_overflow(message) {
                return Err(Error::new(
                    ErrorClass::Session,
                    CONTEXT_OVERFLOW,
                    message.to_string(),
                ));
            }
            return Err(classify(status, None, message, "check GEMINI_API_KEY"));
        }
        if let Some(u) = data.get("usageMetadata") {
            let n = |p: &str| u.get(p).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                // The contract counts uncached prompt tokens only.
                input_tokens: n("promptTokenCount").saturating_sub(n("cachedContentTokenCount")),
                output_tokens: n("candidatesTokenCount") + n("thoughtsTokenCount"),
                cache_read_tokens: n("cachedContentTokenCount"),
                cache_write_tokens: 0,
            });
        }
        let Some(candidate) = data.pointer("/candidates/0") else {
            if let Some(reason) = data
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
            {
                self.finish = Some(FinishReason::ContentFilter);
                out.push(StreamEvent::TextDelta(format!("[blocked: {reason}]")));
            }
            return Ok(());
        };
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let signature = part["thoughtSignature"].as_str().map(str::to_string);
            if let Some(call) = part.get("functionCall") {
                if let Some(sig) = signature {
                    out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                        text: String::new(),
                        signature: Some(sig),
                    }));
                }
                let index = self.calls;
                self.calls += 1;
                let id = call["id"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("gemini-call-{index}"));
                out.push(StreamEvent::ToolCallStart(ToolCallStart {
                    index,
                    id,
                    name: call["name"].as_str().unwrap_or_default().to_string(),
                }));
                out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                    index,
                    arguments: call.get("args").cloned().unwrap_or(json!({})).to_string(),
                }));
                out.push(StreamEvent::ToolCallEnd(index));
            } else if let Some(text) = part["text"].as_str() {
                if part["thought"].as_bool() == Some(true) {
                    out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                        text: text.to_string(),
                        signature,
                    }));
                } else if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text.to_string()));
                }
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            self.finish = Some(match reason {
                "STOP" if self.calls > 0 => FinishReason::ToolCalls,
                "STOP" => FinishReason::Stop,
                "MAX_TOKENS" => FinishReason::Length,
                "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
                    FinishReason::ContentFilter
                }
                _ => FinishReason::Other,
            });
        }
        Ok(())
    }
}

impl SseDecoder for GeminiDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            Error::transient("protocol", format!("a stream chunk is not JSON: {e}"))
        })?;
        self.chunk(&data, out)
    }

    fn done(&self) -> bool {
        false
    }

    fn closed(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        let Some(finish) = self.finish else {
            return Err(Error::transient(
                "stream-truncated",
                "the connection closed before a finish reason",
            ));
        };
        out.extend(self.usage.take().map(StreamEvent::Usage));
        out.push(StreamEvent::Finish(finish));
        Ok(())
    }
}
