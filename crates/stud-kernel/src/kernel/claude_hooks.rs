//! Claude Code's hooks from a project's `.claude/settings.json`, for the
//! bundled `command-hooks`: read only when the user's own settings ask
//! (`hooks.command-hooks.claudeSettings: true`, global only) and the
//! project is trusted with its review accepted. The review lists each
//! command line, so a changed command is not run until accepted again.

use std::path::Path;

use serde_json::Value;

use crate::config::ExtensionConfigs;
use crate::extensions::ProjectScope;
use crate::manifest::Kind;

/// The component that runs them.
const COMPONENT: &str = "command-hooks";
/// The events it has a slot for.
const EVENTS: [&str; 3] = ["PreToolUse", "PostToolUse", "UserPromptSubmit"];

/// `configs` with the project's Claude Code hooks added to
/// `command-hooks`' config, when the user opted in; a warning per event
/// it cannot run.
pub fn with_claude_hooks(
    mut configs: ExtensionConfigs,
    global: &ExtensionConfigs,
    project: &ProjectScope,
    project_dir: &Path,
    warnings: &mut Vec<String>,
) -> ExtensionConfigs {
    let opted_in = global
        .get(Kind::Hook, COMPONENT)
        .and_then(|c| c.get("claudeSettings"))
        == Some(&Value::Bool(true));
    let ProjectScope::Trusted(_) = project else {
        return configs;
    };
    if !opted_in {
        return configs;
    }
    let file = project_dir.join(".claude").join("settings.json");
    let Some(hooks) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("hooks").cloned())
        .and_then(|h| h.as_object().cloned())
    else {
        return configs;
    };
    let config = configs.entry(Kind::Hook, COMPONENT);
    for (event, groups) in hooks {
        if !EVENTS.contains(&event.as_str()) {
            warnings.push(format!(
                "{}: `{event}` hooks are not run by stud (command-hooks runs {}); left out",
                file.display(),
                EVENTS.join(", ")
            ));
            continue;
        }
        let Some(groups) = groups.as_array() else {
            continue;
        };
        if let Some(obj) = config.as_object_mut() {
            let list = obj.entry(event).or_insert_with(|| Value::Array(Vec::new()));
            if let Some(list) = list.as_array_mut() {
                list.extend(groups.iter().cloned());
            }
        }
    }
    configs
}
