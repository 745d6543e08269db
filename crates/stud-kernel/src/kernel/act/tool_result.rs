//! A finished tool call into the result the model sees: events, output
//! limits and the `tool-call.post` slot.

use crate::kernel::act::ActParts;
use std::time::Instant;

use serde_json::Value;

use super::run_tool::Ran;
use crate::kernel::hooks::{SlotStop, TransformFailed};
use crate::kernel::payloads::{call_view, result_parts_from, result_parts_json, result_text};
use crate::manifest::{Phase, Stage};
use crate::runtime::domain::{ResultPart, ToolCall, ToolResult};
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{ResultView, SlotPayload, ToolCallPost};

/// Longest tool output copied into an event.
const EVENT_OUTPUT_CHARS: usize = 4000;

impl ActParts<'_> {
    pub(crate) async fn tool_result(
        &self,
        call: &ToolCall,
        ran: Ran,
        started: Instant,
    ) -> ToolResult {
        let duration_ms = started.elapsed().as_millis() as u64;
        let (content, is_error) = match ran {
            Ran::Cancelled => {
                self.bus.record(KernelEvent::ToolCancelled {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    reason: "turn cancelled".into(),
                });
                return error_result(
                    call,
                    "tool-cancelled",
                    "the turn was cancelled while this tool ran",
                );
            }
            Ran::Ok(out) => {
                let text = result_text(&out.content);
                self.bus.record(KernelEvent::ToolSucceeded {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    output: clip(&text),
                    details: out
                        .details
                        .as_deref()
                        .and_then(|d| serde_json::from_str::<Value>(d).ok()),
                    duration_ms,
                });
                (
                    limit_output(out.content, self.config.tool_output_limit),
                    false,
                )
            }
            Ran::Failed {
                class,
                code,
                message,
                detail,
            } => {
                self.bus.record(KernelEvent::ToolFailed {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    class,
                    code: code.clone(),
                    message: detail,
                    duration_ms: Some(duration_ms),
                });
                (
                    limit_output(
                        vec![ResultPart::Text(format!("error [{code}]: {message}"))],
                        self.config.tool_output_limit,
                    ),
                    true,
                )
            }
        };
        let result = ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        };
        let payload = || {
            ToolCallPost {
                call: call_view(call),
                result: ResultView {
                    content: result_parts_json(&result.content),
                    is_error,
                },
            }
            .into_value()
        };
        let rewritten = match self
            .roster
            .hooks
            .run(Stage::ToolCall, Phase::Post, payload)
            .await
        {
            Ok(p) => p,
            // Fail closed: a transform here may be what keeps a secret
            // from the model, so without it the result is withheld.
            Err(SlotStop::TransformFailed(failed)) => return withheld(call, &failed),
            // Guards cannot attach to post slots (validated at load).
            Err(SlotStop::Denied { .. }) => None,
        };
        let Some(changed) = rewritten else {
            return result;
        };
        match changed
            .pointer("/result/content")
            .and_then(result_parts_from)
        {
            Some(content) => ToolResult { content, ..result },
            // Changed into something that is not a result: the original
            // may be what the transform was there to clean, so neither
            // goes to the model.
            None => error_result(
                call,
                TransformFailed::CODE,
                "the call ran, but its result is withheld: a `tool-call.post` transform changed it into something that is not a result",
            ),
        }
    }
}

/// What the model gets instead of a result a `tool-call.post` transform
/// failed on: that the call ran, and why its result does not come.
fn withheld(call: &ToolCall, failed: &TransformFailed) -> ToolResult {
    error_result(
        call,
        TransformFailed::CODE,
        &format!(
            "the call ran, but its result is withheld: {failed}, and it may be there to remove something from results (a secret, say), so the result does not reach you"
        ),
    )
}

pub(crate) fn error_result(call: &ToolCall, code: &str, message: &str) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: vec![ResultPart::Text(format!("error [{code}]: {message}"))],
        is_error: true,
    }
}

/// Cut text parts past `limit` bytes in total, with a marker that tells
/// the model how to get the rest.
pub(crate) fn limit_output(parts: Vec<ResultPart>, limit: usize) -> Vec<ResultPart> {
    let total: usize = parts
        .iter()
        .map(|p| {
            if let ResultPart::Text(t) = p {
                t.len()
            } else {
                0
            }
        })
        .sum();
    if total <= limit {
        return parts;
    }
    let mut room = limit;
    let mut out = Vec::with_capacity(parts.len() + 1);
    for part in parts {
        match part {
            ResultPart::Text(t) if t.len() > room => {
                let mut end = room;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                room = 0;
                if end > 0 {
                    out.push(ResultPart::Text(t[..end].to_string()));
                }
            }
            ResultPart::Text(t) => {
                room -= t.len();
                out.push(ResultPart::Text(t));
            }
            image => out.push(image),
        }
    }
    out.push(ResultPart::Text(format!(
        "\n[output truncated: {limit} of {total} bytes shown. Ask for less at a time: read with offset and limit, grep with a narrower pattern, path or glob, or pipe a command through head, tail or grep]"
    )));
    out
}

pub(crate) fn clip(text: &str) -> String {
    if text.chars().count() <= EVENT_OUTPUT_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(EVENT_OUTPUT_CHARS).collect();
    format!("{cut}... [truncated]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_is_cut_with_a_marker() {
        let parts = vec![
            ResultPart::Text("é".repeat(10)),
            ResultPart::Text("tail".into()),
        ];
        let out = limit_output(parts.clone(), 100);
        assert_eq!(out.len(), 2, "under the limit: untouched");
        let out = limit_output(parts, 5);
        let ResultPart::Text(first) = &out[0] else {
            panic!()
        };
        assert_eq!(first, "éé");
        let ResultPart::Text(marker) = out.last().unwrap() else {
            panic!()
        };
        assert!(marker.contains("5 of 24 bytes shown"), "{marker}");
    }
}
