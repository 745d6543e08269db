//! Chat Completions SSE chunks to stream events. Tool calls arrive as
//! deltas keyed by `index`: the first delta of an index carries the id and
//! name, later ones pieces of the arguments. Usage comes in a last chunk
//! with no choices (`stream_options.include_usage`); `[DONE]` ends it.

use std::collections::BTreeSet;

use stud_sdk::kinds::provider::{FinishReason, ToolCallDelta, ToolCallStart};
use stud_sdk::prelude::*;
use stud_sdk::sse::{Event, SseDecoder};
use stud_sdk::wit::stud::extension::provider_types::ThinkingDelta;

#[derive(Default)]
pub struct ChatDecoder {
    open_calls: BTreeSet<u32>,
    finish: Option<FinishReason>,
    done: bool,
}

impl ChatDecoder {
    fn end(&mut self) -> Vec<StreamEvent> {
        self.done = true;
        let mut out: Vec<StreamEvent> = std::mem::take(&mut self.open_calls)
            .into_iter()
            .map(StreamEvent::ToolCallEnd)
            .collect();
        out.push(StreamEvent::Finish(
            self.finish.unwrap_or(FinishReason::Stop),
        ));
        out
    }

    fn chunk(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Error::transient("protocol", format!("a stream chunk is not JSON: {e}"))
        })?;
        if let Some(err) = chunk.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(Error::transient(
                "stream-error",
                format!("the server reported an error mid-stream: {message}"),
            ));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            out.push(StreamEvent::Usage(Usage {
                // The contract counts uncached prompt tokens only.
                input_tokens: n("/prompt_tokens")
                    .saturating_sub(n("/prompt_tokens_details/cached_tokens")),
                output_tokens: n("/completion_tokens"),
                cache_read_tokens: n("/prompt_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            }));
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
        for key in ["reasoning_content", "reasoning"] {
            if let Some(t) = delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                    text: t.to_string(),
                    signature: None,
                }));
            }
        }
        if let Some(t) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            out.push(StreamEvent::TextDelta(t.to_string()));
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as u32;
            if !self.open_calls.contains(&index) {
                let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.open_calls.insert(index);
                out.push(StreamEvent::ToolCallStart(ToolCallStart {
                    index,
                    id: if id.is_empty() {
                        format!("call_{index}")
                    } else {
                        id.to_string()
                    },
                    name: name.to_string(),
                }));
            }
            if let Some(args) = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
            {
                out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                    index,
                    arguments: args.to_string(),
                }));
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(match reason {
                "stop" => FinishReason::Stop,
                "tool_calls" | "function_call" => FinishReason::ToolCalls,
                "length" => FinishReason::Length,
                "content_filter" => FinishReason::ContentFilter,
                _ => FinishReason::Other,
            });
        }
        Ok(())
    }
}

impl SseDecoder for ChatDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        let data = event.data.trim();
        if data == "[DONE]" {
            out.extend(self.end());
            return Ok(());
        }
        self.chunk(data, out)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn closed(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), Error> {
        // Some servers end without `[DONE]`; a finish reason means the
        // answer was complete.
        if self.finish.is_none() {
            return Err(Error::transient(
                "stream-truncated",
                "the connection closed before the answer was complete",
            ));
        }
        out.extend(self.end());
        Ok(())
    }
}
