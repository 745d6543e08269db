//! Kernel events as ACP `session/update` payloads: streamed text and
//! thoughts, tool calls and their updates. A subagent's events stay inside
//! its `task` call and are not sent.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::kernel::Event;
use stud_protocol::events::KernelEvent;

/// The ACP tool kind of a stud tool, so editors pick the right icon.
pub fn tool_kind(tool: &str) -> &'static str {
    match tool {
        "read" | "list" => "read",
        "write" | "edit" | "multi-edit" => "edit",
        "grep" | "glob" => "search",
        "bash" => "execute",
        "web-fetch" => "fetch",
        "task" => "think",
        _ => "other",
    }
}

pub(super) fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// What the session's events said about its tool calls so far: their
/// arguments (edits become diffs), which call a question is about.
pub struct Calls {
    cwd: PathBuf,
    args: HashMap<String, (String, Value)>,
    /// Proposed and not decided yet, in order: a question is about the
    /// first of them (calls are decided one at a time, in order).
    undecided: Vec<String>,
    /// Question id -> the call it is about.
    asked: HashMap<String, String>,
    /// The attached state machine's stages and where each stands (ACP
    /// plan statuses), in plan order.
    plan: Vec<(String, &'static str)>,
}

impl Calls {
    pub fn new(cwd: PathBuf) -> Self {
        Calls {
            cwd,
            args: HashMap::new(),
            undecided: Vec::new(),
            asked: HashMap::new(),
            plan: Vec::new(),
        }
    }

    /// Show the stages as the plan, none started, `entry` first (the rest
    /// by name: which runs next is the machine's choice); the `plan`
    /// update.
    pub fn start_plan(&mut self, entry: &str, stages: &[String]) -> Value {
        let rest = stages.iter().filter(|s| *s != entry).map(String::as_str);
        self.plan = std::iter::once(entry)
            .chain(rest)
            .map(|s| (s.to_string(), "pending"))
            .collect();
        self.plan_update()
    }

    fn plan_update(&self) -> Value {
        let entries: Vec<Value> = self
            .plan
            .iter()
            .map(|(stage, status)| {
                json!({"content": format!("stage {stage}"), "priority": "medium", "status": status})
            })
            .collect();
        json!({"sessionUpdate": "plan", "entries": entries})
    }

    /// Move `stage` to `status`; the `plan` update when that changed it.
    fn mark(&mut self, stage: &str, status: &'static str) -> Option<Value> {
        let entry = self.plan.iter_mut().find(|(s, _)| s == stage)?;
        if entry.1 == status {
            return None;
        }
        entry.1 = status;
        Some(self.plan_update())
    }

    /// The call question `id` is about, once its event was seen.
    pub fn asked(&self, id: &str) -> Option<(String, String, Value)> {
        let call = self.asked.get(id)?;
        let (tool, args) = self.args.get(call)?;
        Some((call.clone(), tool.clone(), args.clone()))
    }

    /// Take in `ev`; the `update` object for it, if it is one an editor
    /// shows.
    pub fn update(&mut self, ev: &Event) -> Option<Value> {
        if ev.payload.get("agent").is_some() {
            return None;
        }
        // Only the events an editor is shown or that say which call a
        // question is about: no parsing for the rest.
        if !matches!(
            ev.name.as_str(),
            "provider.tokens"
                | "provider.reasoning"
                | "tool.proposed"
                | "tool.started"
                | "tool.succeeded"
                | "tool.failed"
                | "tool.cancelled"
                | "approval.decided"
                | "interaction.requested"
                | "workflow.attached"
                | "workflow.phase.pre"
                | "workflow.stage.ended"
        ) {
            return None;
        }
        let event = KernelEvent::from_wire(&ev.name, &ev.payload)?.ok()?;
        match &event {
            KernelEvent::ToolProposed {
                call_id,
                tool,
                arguments,
            } => {
                self.args
                    .insert(call_id.clone(), (tool.clone(), arguments.clone()));
                self.undecided.push(call_id.clone());
            }
            // A layer that passed (no state machine stage running) decided
            // nothing: the question that may follow is still about the call.
            KernelEvent::ApprovalDecided {
                call_id, decision, ..
            } if *decision != stud_protocol::events::Decision::Pass => {
                self.undecided.retain(|c| c != call_id);
            }
            KernelEvent::ToolFailed { call_id, .. } => {
                self.undecided.retain(|c| c != call_id);
            }
            KernelEvent::WorkflowAttached { stages, entry, .. } => {
                return Some(self.start_plan(entry, stages));
            }
            KernelEvent::WorkflowPhasePre { at } => return self.mark(&at.stage_id, "in_progress"),
            KernelEvent::WorkflowStageEnded {
                stage_id, outcome, ..
            } => {
                let status = match outcome.as_str() {
                    "ok" | "skip" => "completed",
                    "retry" => "in_progress",
                    _ => "pending",
                };
                return self.mark(stage_id, status);
            }
            KernelEvent::InteractionRequested { id, kind } if kind.get("approve").is_some() => {
                if let Some(first) = self.undecided.first() {
                    self.asked.insert(id.clone(), first.clone());
                }
                return None;
            }
            _ => {}
        }
        let mut update = update_for(event)?;
        // ACP locations are absolute paths.
        if let Some(path) = update["locations"][0]["path"].as_str() {
            update["locations"][0]["path"] = json!(self.cwd.join(path));
        }
        let diff = match update["status"].as_str() {
            Some("completed") => update["toolCallId"].as_str().and_then(|c| self.diff(c)),
            _ => None,
        };
        // A finished call's arguments are no longer needed.
        if matches!(update["status"].as_str(), Some("completed" | "failed"))
            && let Some(call) = update["toolCallId"].as_str()
        {
            self.args.remove(call);
            self.asked.retain(|_, c| c != call);
        }
        if let Some(diff) = diff
            && let Some(content) = update["content"].as_array_mut()
        {
            content.push(diff);
        }
        Some(update)
    }

    /// An edit's or a write's change as ACP diff content.
    fn diff(&self, call: &str) -> Option<Value> {
        let (tool, args) = self.args.get(call)?;
        let path = self.cwd.join(args.get("path")?.as_str()?);
        let (old, new) = match tool.as_str() {
            "edit" => (
                Value::from(args.get("old_string")?.as_str()?),
                args.get("new_string")?.as_str()?,
            ),
            "write" => (Value::Null, args.get("content")?.as_str()?),
            _ => return None,
        };
        Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
    }
}

/// The `update` object for `event`, if it is one an editor shows.
fn update_for(event: KernelEvent) -> Option<Value> {
    Some(match event {
        KernelEvent::ProviderTokens { delta } => {
            json!({"sessionUpdate": "agent_message_chunk", "content": text(&delta)})
        }
        KernelEvent::ProviderReasoning { delta } => {
            json!({"sessionUpdate": "agent_thought_chunk", "content": text(&delta)})
        }
        KernelEvent::ToolProposed {
            call_id,
            tool,
            arguments,
        } => {
            let mut u = json!({
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": title(&tool, &arguments),
                "kind": tool_kind(&tool),
                "status": "pending",
                "rawInput": arguments,
            });
            if let Some(path) = arguments.get("path").and_then(Value::as_str) {
                u["locations"] = json!([{"path": path}]);
            }
            u
        }
        KernelEvent::ToolStarted { call_id, .. } => {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"})
        }
        KernelEvent::ToolSucceeded {
            call_id, output, ..
        } => json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "completed",
            "content": [{"type": "content", "content": text(&output)}],
        }),
        KernelEvent::ToolFailed {
            call_id,
            code,
            message,
            ..
        } => json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "failed",
            "content": [{"type": "content", "content": text(&format!("{code}: {message}"))}],
        }),
        KernelEvent::ToolCancelled {
            call_id, reason, ..
        } => json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "failed",
            "content": [{"type": "content", "content": text(&format!("cancelled: {reason}"))}],
        }),
        _ => return None,
    })
}

/// A short title: the tool and its main argument.
pub(super) fn title(tool: &str, args: &Value) -> String {
    let main = ["path", "command", "pattern", "url", "description"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str));
    match main {
        Some(m) => {
            let m: String = m.chars().take(80).collect();
            format!("{tool} {m}")
        }
        None => tool.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, payload: Value) -> Event {
        Event {
            seq: 1,
            name: name.into(),
            turn_id: None,
            timestamp_ms: 0,
            payload,
            authoritative: true,
        }
    }

    #[test]
    fn a_question_is_about_the_first_undecided_call_and_edits_carry_diffs() {
        let mut calls = Calls::new("/p".into());
        for (id, tool) in [("a", "read"), ("b", "edit")] {
            let args = json!({"path": "f.txt", "old_string": "x", "new_string": "y"});
            let u = calls
                .update(&ev(
                    "tool.proposed",
                    json!({"call_id": id, "tool": tool, "arguments": args}),
                ))
                .unwrap();
            assert_eq!(u["locations"][0]["path"], "/p/f.txt");
        }
        let decided = json!({"call_id": "a", "tool": "read", "key": "", "decision": "approve", "layer": "mode", "reason": ""});
        assert!(calls.update(&ev("approval.decided", decided)).is_none());
        // The state machine layer passing `b` on leaves it undecided.
        let passed = json!({"call_id": "b", "tool": "edit", "key": "f.txt", "decision": "pass", "layer": "state-machine", "reason": ""});
        assert!(calls.update(&ev("approval.decided", passed)).is_none());
        let asked =
            json!({"id": "i1", "kind": {"approve": "edit", "key": "f.txt", "description": ""}});
        assert!(calls.update(&ev("interaction.requested", asked)).is_none());
        assert_eq!(calls.asked("i1").unwrap().0, "b");
        let done = json!({"call_id": "b", "tool": "edit", "output": "Edited", "details": null, "duration_ms": 1});
        let u = calls.update(&ev("tool.succeeded", done)).unwrap();
        assert_eq!(u["content"][1]["type"], "diff");
        assert_eq!(u["content"][1]["path"], "/p/f.txt");
        // A subagent's events stay inside its `task` call.
        let child = json!({"delta": "x", "agent": "main/general"});
        assert!(calls.update(&ev("provider.tokens", child)).is_none());
    }
}
