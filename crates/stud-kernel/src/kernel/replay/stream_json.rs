//! A response as a trace keeps it: the events that fold into the same
//! assistant response, one per block (text, each thinking block, each
//! call), the response's usage and its finish reason.

use serde_json::{Value, json};

use crate::kernel::usage::usage_event;
use crate::runtime::domain::{
    FinishReason, StreamEvent, Thinking, ThinkingDelta, ToolCall, ToolCallDelta, ToolCallStart,
    Usage,
};

/// The events of a response that folded into `text`, `thinking`, `calls`.
pub fn events_json(
    text: &str,
    thinking: &[Thinking],
    calls: &[ToolCall],
    usage: &Usage,
    finish: FinishReason,
) -> Vec<Value> {
    let mut out = Vec::new();
    for t in thinking {
        out.push(json!({"thinking": t.text, "signature": t.signature}));
    }
    if !text.is_empty() {
        out.push(json!({"text": text}));
    }
    for c in calls {
        out.push(json!({"call": c.id, "name": c.name, "arguments": c.arguments}));
    }
    if usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        > 0
    {
        out.push(json!({"usage": usage_event(usage)}));
    }
    out.push(json!({"finish": finish_str(finish)}));
    out
}

/// The stream events a kept response replays as; `None` when an entry is
/// not one this build writes.
pub fn events_from(values: &[Value]) -> Option<Vec<StreamEvent>> {
    let mut out = Vec::with_capacity(values.len() + 2);
    let mut index = 0u32;
    for v in values {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(text) = s("text") {
            out.push(StreamEvent::TextDelta(text));
        } else if let Some(text) = s("thinking") {
            out.push(StreamEvent::ThinkingDelta(ThinkingDelta {
                text,
                signature: s("signature"),
            }));
        } else if let Some(id) = s("call") {
            out.push(StreamEvent::ToolCallStart(ToolCallStart {
                index,
                id,
                name: s("name")?,
            }));
            out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                index,
                arguments: s("arguments")?,
            }));
            out.push(StreamEvent::ToolCallEnd(index));
            index += 1;
        } else if let Some(u) = v.get("usage") {
            let u: stud_protocol::events::Usage = serde_json::from_value(u.clone()).ok()?;
            out.push(StreamEvent::Usage(Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_read_tokens: u.cache_read_tokens,
                cache_write_tokens: u.cache_write_tokens,
            }));
        } else if let Some(f) = s("finish") {
            out.push(StreamEvent::Finish(finish_reason_from(&f)?));
        } else {
            return None;
        }
    }
    Some(out)
}

/// A finish reason's name (as events and hook payloads carry it).
pub fn finish_str(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool-calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content-filter",
        FinishReason::Error => "error",
        FinishReason::Other => "other",
    }
}

fn finish_reason_from(s: &str) -> Option<FinishReason> {
    Some(match s {
        "stop" => FinishReason::Stop,
        "tool-calls" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content-filter" => FinishReason::ContentFilter,
        "error" => FinishReason::Error,
        "other" => FinishReason::Other,
        _ => return None,
    })
}
