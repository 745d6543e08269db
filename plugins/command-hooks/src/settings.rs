//! Claude Code's `hooks` settings, as they are written there:
//! `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
//! "command": "...", "timeout": 30}]}], ...}`. Events stud has no slot
//! for are kept out (said in docs/skills-and-commands.md).

use serde::Deserialize;
use stud_sdk::prelude::*;

#[derive(Debug, Clone, Deserialize)]
pub struct Group {
    /// A tool name, `A|B`, a prefix with `.*`, or empty / `*` for all.
    #[serde(default)]
    pub matcher: String,
    pub hooks: Vec<HookCommand>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HookCommand {
    #[serde(rename = "type")]
    pub kind: String,
    pub command: String,
    /// Seconds.
    pub timeout: Option<u64>,
}

#[derive(Debug, Default)]
pub struct Settings {
    pub pre_tool_use: Vec<Group>,
    pub post_tool_use: Vec<Group>,
    pub user_prompt_submit: Vec<Group>,
    pub timeout_seconds: u64,
}

/// Default per command, as Claude Code's.
const DEFAULT_TIMEOUT: u64 = 60;

impl Settings {
    pub fn from_config(config: &Value) -> Result<Self, Error> {
        let event = |name: &str| -> Result<Vec<Group>, Error> {
            let Some(v) = config.get(name) else {
                return Ok(Vec::new());
            };
            let groups: Vec<Group> = serde_json::from_value(v.clone()).map_err(|e| {
                Error::validation("config-invalid", format!("hooks.command-hooks.{name}: {e}"))
            })?;
            for g in &groups {
                for h in &g.hooks {
                    if h.kind != "command" {
                        return Err(Error::validation(
                            "config-invalid",
                            format!(
                                "hooks.command-hooks.{name}: hook type `{}`: only `command` hooks run here",
                                h.kind
                            ),
                        ));
                    }
                }
            }
            Ok(groups)
        };
        Ok(Settings {
            pre_tool_use: event("PreToolUse")?,
            post_tool_use: event("PostToolUse")?,
            user_prompt_submit: event("UserPromptSubmit")?,
            timeout_seconds: config
                .get("timeoutSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_TIMEOUT),
        })
    }
}

/// Whether `matcher` (Claude Code's) takes the tool `name`, in Claude
/// Code's name (`Bash`) or stud's (`bash`).
pub fn matches(matcher: &str, claude: &str, stud: &str) -> bool {
    let m = matcher.trim();
    if m.is_empty() || m == "*" {
        return true;
    }
    m.split('|').any(|alt| {
        let alt = alt.trim();
        match alt.strip_suffix(".*") {
            Some(prefix) => claude.starts_with(prefix) || stud.starts_with(prefix),
            None => alt == claude || alt == stud,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_read_as_claude_code_writes_them() {
        assert!(matches("Bash", "Bash", "bash"));
        assert!(matches("Edit|Write", "Write", "write"));
        assert!(matches(
            "mcp__github__.*",
            "mcp__github__x",
            "mcp__github__x"
        ));
        assert!(matches("", "Read", "read") && matches("*", "Read", "read"));
        assert!(!matches("Bash", "Write", "write"));
    }
}
