//! One hook command: run like the bash tool's commands (the host's
//! process capability: in the project, confined, a clean environment,
//! output capped, killed at the timeout), with the event as JSON on
//! stdin, and its answer read as Claude Code reads it.

use stud_sdk::host::process::{Command, SpawnRequest, run};
use stud_sdk::prelude::*;

/// What a command said.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Go on; what it printed (context for `UserPromptSubmit`).
    Continue(String),
    /// Stop this call or prompt, with the reason.
    Block(String),
    /// Go on with this input instead (`updatedInput`).
    Rewrite(Value),
    /// It could not answer (timeout, signal): nothing it meant is known.
    Failed(String),
    /// It failed in the way Claude Code treats as non-blocking (an exit
    /// code other than 0 and 2).
    Warned(String),
}

pub fn run_command(command: &str, input: &Value, timeout_s: u64) -> Verdict {
    // Scripts written for Claude Code find the project here.
    let line = format!("CLAUDE_PROJECT_DIR=\"$(pwd)\"; export CLAUDE_PROJECT_DIR; {command}");
    let out = match run(&SpawnRequest {
        command: Command::Shell(line),
        cwd: None,
        timeout_ms: Some(u32::try_from(timeout_s.saturating_mul(1000)).unwrap_or(u32::MAX)),
        stdin: Some(input.to_string().into_bytes()),
    }) {
        Ok(o) => o,
        Err(e) => return Verdict::Failed(format!("it could not run: {}", e.message())),
    };
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if out.timed_out {
        return Verdict::Failed(format!(
            "it did not answer within {timeout_s} s and was stopped"
        ));
    }
    match out.exit_code {
        Some(0) => read_answer(&String::from_utf8_lossy(&out.stdout)),
        Some(2) if stderr.is_empty() => Verdict::Block("blocked (exit 2)".into()),
        Some(2) => Verdict::Block(stderr),
        Some(code) => Verdict::Warned(format!("exit {code}: {stderr}")),
        None => Verdict::Failed("it was killed by a signal".into()),
    }
}

/// Exit 0: JSON on stdout decides (`decision`, `continue`,
/// `hookSpecificOutput.permissionDecision` / `updatedInput`), anything
/// else is text. `allow` and `ask` decide nothing here: the authority
/// stack does.
fn read_answer(stdout: &str) -> Verdict {
    let text = stdout.trim();
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Verdict::Continue(text.to_string());
    };
    let reason = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.pointer(k).and_then(Value::as_str))
            .unwrap_or("blocked by the hook")
            .to_string()
    };
    let specific = v.get("hookSpecificOutput");
    if v.get("decision").and_then(Value::as_str) == Some("block") {
        return Verdict::Block(reason(&["/reason"]));
    }
    if v.get("continue").and_then(Value::as_bool) == Some(false) {
        return Verdict::Block(reason(&["/stopReason", "/reason"]));
    }
    if specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str)
        == Some("deny")
    {
        return Verdict::Block(reason(&["/hookSpecificOutput/permissionDecisionReason"]));
    }
    if let Some(updated) = specific
        .and_then(|s| s.get("updatedInput"))
        .filter(|u| u.is_object())
    {
        return Verdict::Rewrite(updated.clone());
    }
    let context = specific
        .and_then(|s| s.get("additionalContext"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Verdict::Continue(context.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_claude_code_reads_them() {
        assert_eq!(
            read_answer("all good"),
            Verdict::Continue("all good".into())
        );
        assert_eq!(
            read_answer(r#"{"decision": "block", "reason": "no"}"#),
            Verdict::Block("no".into())
        );
        assert_eq!(
            read_answer(
                r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "rm is not allowed"}}"#
            ),
            Verdict::Block("rm is not allowed".into())
        );
        assert_eq!(
            read_answer(
                r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}"#
            ),
            Verdict::Rewrite(json!({"command": "ls"}))
        );
        // `allow` alone approves nothing: the authority stack decides.
        assert_eq!(
            read_answer(r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#),
            Verdict::Continue(String::new())
        );
    }
}
