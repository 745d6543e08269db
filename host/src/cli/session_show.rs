//! `stud session show ID`: a kept session as a person reads it (who said
//! what, tool calls with a one-line result summary, usage), or its raw
//! manifest and records with `--json`. Everything printed comes from the
//! session's files and is data: it goes through `terminal::safe`.

use serde_json::Value;

use crate::kernel::payloads::{message_from, result_text, role_str};
use crate::runtime::domain::{ContentPart, Message};
use stud_protocol::session_records::SessionRecord;

/// The turns that changed files, and the restores, from the session's
/// checkpoint journal (`/undo` and `/rewind` work on these).
pub fn checkpoint_lines(records: &[crate::kernel::checkpoints::Record]) -> Vec<String> {
    use crate::kernel::checkpoints::{Kind, describe, standing};
    let stand: Vec<u64> = standing(records).iter().map(|r| r.seq).collect();
    let mut out = Vec::new();
    for r in records.iter().filter(|r| !r.changed.is_empty()) {
        if out.is_empty() {
            out.push(String::new());
            out.push("files changed:".into());
        }
        let undone = if stand.contains(&r.seq) {
            ""
        } else {
            " [undone]"
        };
        let what = match r.kind {
            Kind::Turn => describe(r),
            Kind::Restore { .. } => format!("restore ({})", r.prompt),
        };
        out.push(format!("  {what}{undone}: {}", r.changed.join(", ")));
        if let Some(commit) = &r.commit {
            out.push(format!(
                "    before it: git commit {commit} (git diff {commit})"
            ));
        }
    }
    out
}

/// Longest line of a tool result summary or a call's arguments.
const SUMMARY_CHARS: usize = 160;

/// The session as readable text, one line per entry of the returned list.
pub fn readable(manifest: &Value, records: &[String]) -> Vec<String> {
    let s = |k: &str| manifest[k].as_str().unwrap_or("?").to_string();
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let usage = &manifest["usage"];
    let mut out = vec![
        format!("session {}  {}", s("session_id"), s("title")),
        format!(
            "project {}; provider {}, model {}, mode {}",
            s("project_root"),
            s("provider"),
            s("model"),
            s("security_mode")
        ),
        format!(
            "{} turns; tokens in {}, out {}, cache read {}; cost ${:.4}",
            n(&manifest["turns"]),
            n(&usage["input_tokens"]),
            n(&usage["output_tokens"]),
            n(&usage["cache_read_tokens"]),
            manifest["cost_usd"].as_f64().unwrap_or(0.0)
        ),
    ];
    for r in records {
        match SessionRecord::parse(r) {
            Some(SessionRecord::Message { message }) => {
                if let Some(m) = message_from(&message) {
                    out.push(String::new());
                    message_lines(&m, &mut out);
                }
            }
            Some(SessionRecord::Compaction { removed, .. }) => {
                out.push(String::new());
                let removed = if removed.is_empty() {
                    "earlier messages".to_string()
                } else {
                    removed
                };
                out.push(format!("[compacted: {removed}]"));
            }
            Some(SessionRecord::Workflow { .. } | SessionRecord::Trace { .. }) | None => {}
        }
    }
    out
}

/// One child session in the tree: its agent path, id, the call it
/// answered, and what it spent.
pub fn agent_line(id: &str, manifest: &Value) -> String {
    let usage = &manifest["usage"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    format!(
        "{}  {id}  (call {}): {} message(s); tokens in {}, out {}; cost ${:.4}; {}",
        manifest["agent"]["path"].as_str().unwrap_or("?"),
        manifest["parent"]["call_id"].as_str().unwrap_or("?"),
        n(&manifest["messages"]),
        n(&usage["input_tokens"]),
        n(&usage["output_tokens"]),
        manifest["cost_usd"].as_f64().unwrap_or(0.0),
        manifest["title"].as_str().unwrap_or("")
    )
}

fn message_lines(m: &Message, out: &mut Vec<String>) {
    out.push(format!("{}:", role_str(m.role)));
    for part in &m.content {
        match part {
            ContentPart::Text(t) => out.extend(t.lines().map(|l| format!("  {l}"))),
            ContentPart::Thinking(t) => out.push(format!("  (thinking) {}", clip(&t.text))),
            ContentPart::Image(_) => out.push("  (image)".into()),
            ContentPart::ToolCall(c) => out.push(format!("  -> {} {}", c.name, clip(&c.arguments))),
            ContentPart::ToolResult(r) => {
                let text = result_text(&r.content);
                let lines = text.lines().count();
                let more = if lines > 1 {
                    format!(" (+{} lines)", lines - 1)
                } else {
                    String::new()
                };
                let mark = if r.is_error { "!" } else { "=" };
                out.push(format!(
                    "  {mark} {}: {}{more}",
                    r.name,
                    clip(text.lines().next().unwrap_or(""))
                ));
            }
        }
    }
}

fn clip(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}...", &one_line[..cut]),
        None => one_line,
    }
}

/// `--stats`: one row per extension the session called, from its
/// manifest's `metering`.
pub fn stats_lines(manifest: &Value) -> Vec<String> {
    let rows = manifest["metering"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        return vec![
            "(no extension was called in this session, or it was recorded before metering)".into(),
        ];
    }
    let width = rows
        .iter()
        .filter_map(|r| r["id"].as_str())
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(2)
        .max(9);
    let mut out = vec![format!(
        "{:width$}  {:<16} {:>6} {:>6} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>9}",
        "extension",
        "kind",
        "calls",
        "failed",
        "cpu ms",
        "host ms",
        "peak MiB",
        "net out B",
        "net in B",
        "tokens",
        "cost $"
    )];
    for r in &rows {
        let n = |k: &str| r[k].as_u64().unwrap_or(0);
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        out.push(format!(
            "{:width$}  {:<16} {:>6} {:>6} {:>10.1} {:>10.1} {:>9.1} {:>10} {:>10} {:>9} {:>9.4}",
            r["id"].as_str().unwrap_or("?"),
            r["kind"].as_str().unwrap_or("?"),
            n("calls"),
            n("failures"),
            f("cpu_ms"),
            f("host_ms"),
            n("peak_memory_bytes") as f64 / (1024.0 * 1024.0),
            n("net_bytes_sent"),
            n("net_bytes_received"),
            n("tokens"),
            f("cost_usd"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversation_reads_as_roles_calls_and_summaries() {
        let manifest = json!({"session_id": "s1", "title": "fix it", "provider": "scripted", "model": "m", "security_mode": "ask", "turns": 1, "usage": {"input_tokens": 10, "output_tokens": 3}});
        let records = [
            json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "list files"}]}}),
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "tool_call", "id": "c", "name": "bash", "arguments": {"command": "ls"}}]}}),
            json!({"type": "message", "message": {"role": "tool", "content": [{"type": "tool_result", "call_id": "c", "name": "bash", "content": [{"type": "text", "text": "a\nb\nc"}], "is_error": false}]}}),
        ]
        .map(|r| r.to_string());
        let text = readable(&manifest, &records).join("\n");
        assert!(text.contains("session s1  fix it"), "{text}");
        assert!(text.contains("tokens in 10, out 3"), "{text}");
        assert!(text.contains("user:\n  list files"), "{text}");
        assert!(text.contains("-> bash {\"command\":\"ls\"}"), "{text}");
        assert!(text.contains("= bash: a (+2 lines)"), "{text}");
    }
}
