//! `console`: a line-oriented terminal UI. It renders the event stream
//! (streamed text, tool calls and results, warnings), answers interaction
//! requests by asking on the terminal, and reads the next prompt. Every
//! piece of text it did not write itself goes through
//! `stud_sdk::terminal::safe`: model or tool output must not be able to
//! steer the terminal (clear it, move the cursor, fake a prompt).

use stud_sdk::events::{Decision, KernelEvent, TurnResult};
use stud_sdk::host::terminal;
use stud_sdk::prelude::*;
use stud_sdk::terminal::safe;
use stud_sdk::wit::stud::extension::interaction::{
    InteractionKind, InteractionRequest, InteractionResponse, InteractionStatus,
};

/// Longest tool output preview line.
const PREVIEW_CHARS: usize = 160;

#[derive(Default)]
struct Console {
    /// Text was streamed since the last newline.
    mid_line: bool,
    /// The session store refused a write and has not confirmed one since:
    /// said once, not at every record.
    store_failing: bool,
}

impl Ui for Console {
    fn on_event(&mut self, event: Event) {
        let agent = KernelEvent::agent_path(&event.payload);
        // An extension's own event, or one this console is too old for.
        let Some(Ok(event)) = KernelEvent::from_wire_text(&event.name, &event.payload) else {
            return;
        };
        if let Some(path) = agent {
            self.agent_event(&path, event);
            return;
        }
        match event {
            KernelEvent::AgentStarted {
                path, description, ..
            } => {
                self.newline();
                terminal::write(&format!(
                    "[agent {}] {}\n",
                    safe(&path),
                    clip(&safe(&description))
                ));
            }
            KernelEvent::AgentFinished {
                path,
                status,
                code,
                duration_ms,
                ..
            } => {
                self.newline();
                let why = if code.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", safe(&code))
                };
                terminal::write(&format!(
                    "[agent {}] {}{why} after {:.1} s\n",
                    safe(&path),
                    status,
                    duration_ms as f64 / 1000.0
                ));
            }
            KernelEvent::ProviderTokens { delta } => {
                self.mid_line = !delta.ends_with('\n');
                terminal::write(&safe(&delta));
            }
            KernelEvent::ToolProposed {
                tool, arguments, ..
            } => {
                self.newline();
                // JSON escapes control characters; safe() is for the rest.
                let args = arguments.to_string();
                terminal::write(&format!("> {}({})\n", safe(&tool), clip(&safe(&args))));
            }
            KernelEvent::ToolSucceeded { output, .. } => {
                let out = safe(&output);
                let lines = out.lines().count();
                let first = out.lines().next().unwrap_or("");
                let more = if lines > 1 {
                    format!(" (+{} lines)", lines - 1)
                } else {
                    String::new()
                };
                terminal::write(&format!("  = {}{more}\n", clip(first)));
            }
            KernelEvent::ToolProgress { progress, .. } => {
                let message = progress
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                terminal::write(&format!("  . {}\n", clip(&safe(message))));
            }
            KernelEvent::ToolFailed { code, message, .. } => {
                terminal::write(&format!("  ! {}: {}\n", safe(&code), clip(&safe(&message))))
            }
            KernelEvent::ToolCancelled { reason, .. } => {
                terminal::write(&format!("  ! cancelled: {}\n", safe(&reason)))
            }
            KernelEvent::ApprovalDecided {
                decision: Decision::Deny,
                layer,
                reason,
                ..
            } => terminal::write(&format!(
                "  ! denied by {}: {}\n",
                safe(&layer),
                clip(&safe(&reason))
            )),
            KernelEvent::AllowlistAdded { entries, file, .. } => terminal::write(&format!(
                "  . added to the allowlist in {}: {}\n",
                safe(&file),
                clip(&safe(&entries.join(", ")))
            )),
            KernelEvent::ExtensionReloaded {
                id,
                version,
                boundary,
                ..
            } => {
                self.newline();
                terminal::write(&format!(
                    "[reload] {} {} is in use from {}\n",
                    safe(&id),
                    safe(&version),
                    safe(&boundary)
                ));
            }
            KernelEvent::ExtensionReloadFailed { id, error: why, .. }
            | KernelEvent::ExtensionReloadRefused { id, reason: why } => {
                self.newline();
                terminal::write(&format!(
                    "[reload] {} kept its running version: {}\n",
                    safe(&id),
                    clip(&safe(&why))
                ));
            }
            KernelEvent::PersistenceFailed { error, .. } if !self.store_failing => {
                self.store_failing = true;
                self.newline();
                terminal::write(&format!(
                    "[not saved] {}\n",
                    safe(&error).replace('\n', " ")
                ));
            }
            KernelEvent::MessagePersisted { .. } if self.store_failing => {
                self.store_failing = false;
                self.newline();
                terminal::write("[saved] the session store is writing again\n");
            }
            KernelEvent::Diagnostic { level, message } => {
                self.newline();
                terminal::write(&format!("[{level}] {}\n", safe(&message)));
            }
            KernelEvent::TurnEnd {
                status, message, ..
            } => {
                self.newline();
                if status != TurnResult::Ok {
                    terminal::write(&format!("[turn {status}] {}\n", safe(&message)));
                }
            }
            KernelEvent::TurnStart {
                stage_id: Some(stage),
                ..
            } => {
                self.newline();
                terminal::write(&format!("[stage {}]\n", safe(&stage)));
            }
            KernelEvent::TurnStart {
                stage_ids: Some(ids),
                ..
            } => {
                self.newline();
                let ids: Vec<String> = ids.iter().map(|i| safe(i).into_owned()).collect();
                terminal::write(&format!("[stages {} at once]\n", ids.join(" | ")));
            }
            KernelEvent::WorkflowStageEnded {
                stage_id,
                attempt,
                outcome,
                ..
            } => {
                self.newline();
                terminal::write(&format!(
                    "[stage {} attempt {attempt}: {outcome}]\n",
                    safe(&stage_id)
                ));
            }
            _ => {}
        }
    }

    fn on_interaction(&mut self, request: InteractionRequest) -> InteractionResponse {
        self.newline();
        let id = request.correlation_id.clone();
        let (status, value) = match request.kind {
            InteractionKind::Approve(a) => {
                let key = if a.approval_key.is_empty() {
                    String::new()
                } else {
                    format!(" `{}`", safe(&a.approval_key))
                };
                // A subagent's question says whose it is.
                let whose = a
                    .description
                    .strip_prefix("[agent ")
                    .and_then(|r| r.split_once("] "))
                    .map(|(path, _)| format!("[agent {}] ", safe(path)))
                    .unwrap_or_default();
                yes_no(&format!("{whose}Allow {}{key}? [y/N] ", safe(&a.tool)))
            }
            InteractionKind::Confirm(prompt) => yes_no(&format!("{} [y/N] ", safe(&prompt))),
            InteractionKind::Ask(prompt) => {
                match terminal::read_line(&format!("{} ", safe(&prompt))) {
                    Some(line) => (InteractionStatus::Accepted, Some(line)),
                    None => (InteractionStatus::Rejected, None),
                }
            }
            InteractionKind::Select(choice) => {
                for (i, option) in choice.options.iter().enumerate() {
                    terminal::write(&format!("  {}. {}\n", i + 1, safe(option)));
                }
                let line = terminal::read_line(&format!(
                    "{} [1-{}] ",
                    safe(&choice.prompt),
                    choice.options.len()
                ));
                match line
                    .and_then(|l| l.trim().parse::<usize>().ok())
                    .and_then(|n| choice.options.get(n.wrapping_sub(1)))
                {
                    Some(option) => (InteractionStatus::Accepted, Some(option.clone())),
                    None => (InteractionStatus::Rejected, None),
                }
            }
        };
        InteractionResponse {
            correlation_id: id,
            status,
            value,
        }
    }

    fn read_input(&mut self) -> Option<String> {
        self.newline();
        terminal::read_line("stud> ")
    }
}

impl Console {
    /// A subagent's work, one line per call, under its path; its text
    /// is its parent's business (it comes back as the `task` result).
    fn agent_event(&mut self, path: &str, event: KernelEvent) {
        let line = match event {
            KernelEvent::ToolProposed {
                tool, arguments, ..
            } => format!("> {}({})", safe(&tool), clip(&safe(&arguments.to_string()))),
            KernelEvent::ToolFailed { code, message, .. } => {
                format!("! {}: {}", safe(&code), clip(&safe(&message)))
            }
            KernelEvent::ApprovalDecided {
                decision: Decision::Deny,
                reason,
                ..
            } => format!("! denied: {}", clip(&safe(&reason))),
            KernelEvent::AgentStarted {
                path: child,
                description,
                ..
            } => format!("[agent {}] {}", safe(&child), clip(&safe(&description))),
            KernelEvent::AgentFinished {
                path: child,
                status,
                ..
            } => format!("[agent {}] {status}", safe(&child)),
            _ => return,
        };
        self.newline();
        terminal::write(&format!("  [{}] {line}\n", safe(path)));
    }

    fn newline(&mut self) {
        if self.mid_line {
            terminal::write("\n");
            self.mid_line = false;
        }
    }
}

fn yes_no(prompt: &str) -> (InteractionStatus, Option<String>) {
    match terminal::read_line(prompt) {
        Some(line) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
            (InteractionStatus::Accepted, Some("yes".into()))
        }
        _ => (InteractionStatus::Rejected, Some("no".into())),
    }
}

fn clip(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= PREVIEW_CHARS {
        return one_line;
    }
    let cut: String = one_line.chars().take(PREVIEW_CHARS).collect();
    format!("{cut}...")
}

stud_sdk::export_ui!(Console);
