//! A kept conversation as ACP updates, for `session/load`.

use serde_json::{Value, json};

use super::updates::{text, title, tool_kind};

/// A kept conversation as the updates that show it again
/// (`session/load`): the person's and the model's text, thoughts, and
/// every tool call with its result.
pub fn replay(
    history: &[crate::runtime::domain::Message],
    checkpoints: &[crate::kernel::checkpoints::Record],
    project: &std::path::Path,
) -> Vec<Value> {
    use crate::runtime::domain::{ContentPart, Role};
    let marks = file_marks(history, checkpoints, project);
    let mut out = Vec::new();
    for (i, m) in history.iter().enumerate() {
        out.extend(
            marks
                .iter()
                .filter(|(at, _)| *at == i)
                .map(|(_, u)| u.clone()),
        );
        for part in &m.content {
            match part {
                ContentPart::Text(t) => out.push(json!({
                    "sessionUpdate": if m.role == Role::User { "user_message_chunk" } else { "agent_message_chunk" },
                    "content": text(t),
                })),
                ContentPart::Thinking(t) => {
                    out.push(json!({"sessionUpdate": "agent_thought_chunk", "content": text(&t.text)}))
                }
                ContentPart::ToolCall(c) => {
                    let args: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::Null);
                    out.push(json!({
                        "sessionUpdate": "tool_call",
                        "toolCallId": c.id,
                        "title": title(&c.name, &args),
                        "kind": tool_kind(&c.name),
                        "status": "pending",
                        "rawInput": args,
                    }))
                }
                ContentPart::ToolResult(r) => out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": r.call_id,
                    "status": if r.is_error { "failed" } else { "completed" },
                    "content": [{"type": "content", "content": text(&crate::kernel::payloads::result_text(&r.content))}],
                })),
                ContentPart::Image(_) => {}
            }
        }
    }
    out.extend(
        marks
            .iter()
            .filter(|(at, _)| *at >= history.len())
            .map(|(_, u)| u.clone()),
    );
    out
}

/// Each turn that changed files, as a finished `edit` tool call whose
/// locations are those files, placed after the turn's messages: ACP has
/// no update for "a turn changed these files", and a tool call with
/// locations is what editors already show as such. A turn whose messages
/// no longer line up (compacted since) is marked at the end.
fn file_marks(
    history: &[crate::runtime::domain::Message],
    records: &[crate::kernel::checkpoints::Record],
    project: &std::path::Path,
) -> Vec<(usize, Value)> {
    use crate::kernel::checkpoints::{Kind, message_digest};
    let turns: Vec<_> = records.iter().filter(|r| r.kind == Kind::Turn).collect();
    let mut marks = Vec::new();
    for (k, r) in turns.iter().enumerate() {
        if r.changed.is_empty() {
            continue;
        }
        let lines_up = |at: usize, digest: &Option<String>| {
            digest
                .as_ref()
                .is_some_and(|d| history.get(at).is_some_and(|m| message_digest(m) == *d))
        };
        let at = match turns.get(k + 1) {
            _ if !lines_up(r.history_len, &r.first_message) => usize::MAX,
            Some(next) if lines_up(next.history_len, &next.first_message) => next.history_len,
            Some(_) => usize::MAX,
            None => history.len(),
        };
        let locations: Vec<Value> = r
            .changed
            .iter()
            .map(|p| json!({"path": project.join(p).display().to_string()}))
            .collect();
        marks.push((
            at,
            json!({
                "sessionUpdate": "tool_call",
                "toolCallId": format!("checkpoint-{}", r.seq),
                "title": format!("Turn {} changed {} file(s) (/undo, /rewind)", r.turn, r.changed.len()),
                "kind": "edit",
                "status": "completed",
                "locations": locations,
                "rawInput": {"turn": r.turn, "files": r.changed},
            }),
        ));
    }
    marks
}
