//! Plan mode (`--plan`, `/plan`, Shift-Tab in the full-screen UI): while
//! it is on, every turn may use only the read-only tools and the model is
//! asked for a plan instead of changes. Leaving it shows the plan and asks
//! whether to carry it out, in the session's own mode. It only narrows:
//! the security mode still decides each read-only call, and nothing is
//! approved because plan mode is on or off.

use super::turn_context::ToolLimit;

/// The kernel's command that enters and leaves plan mode.
pub const PLAN_COMMAND: &str = "/plan";

/// What the system prompt says while plan mode is on.
pub const PLAN_PROMPT: &str = "<plan-mode>\nPlan mode is on: you can use only read-only tools, and you must not change files or run commands that change anything. Explore what you need, then answer with a concrete, numbered plan: the files to change and how, the commands to run, and how to check the result. The person reviews the plan and decides whether to carry it out.\n</plan-mode>";

/// What the prompt is when the person accepts the plan.
pub const CARRY_OUT: &str =
    "Carry out the plan you made above, step by step, and say what you changed.";

/// The tools a plan-mode turn may use: the read-only ones among
/// `offered` (with their `read_only` flag), within `narrowed` when a
/// command narrowed the turn already.
pub fn limit(offered: &[(String, bool)], narrowed: Option<ToolLimit>) -> ToolLimit {
    let allowed = offered
        .iter()
        .filter(|(name, read_only)| *read_only && narrowed.as_ref().is_none_or(|n| n.allows(name)))
        .map(|(name, _)| name.clone())
        .collect();
    let by = match narrowed {
        Some(n) => format!("plan mode and {}", n.by),
        None => "plan mode: read-only tools".into(),
    };
    ToolLimit { allowed, by }
}

/// The question that ends plan mode, with the plan's start in it.
pub fn carry_out_question(plan: &str, mode: &str) -> String {
    const SHOWN_LINES: usize = 30;
    let lines: Vec<&str> = plan.lines().collect();
    let mut shown = lines[..lines.len().min(SHOWN_LINES)].join("\n");
    if lines.len() > SHOWN_LINES {
        shown.push_str(&format!(
            "\n… ({} more lines above)",
            lines.len() - SHOWN_LINES
        ));
    }
    format!("The plan:\n\n{shown}\n\nCarry it out now (in the {mode} mode)?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_mode_keeps_read_only_tools_within_a_narrowing() {
        let offered = vec![
            ("read".to_string(), true),
            ("grep".to_string(), true),
            ("write".to_string(), false),
            ("bash".to_string(), false),
        ];
        let l = limit(&offered, None);
        assert!(l.allows("read") && l.allows("grep") && !l.allows("write") && !l.allows("bash"));
        let narrowed = ToolLimit {
            allowed: ["grep".to_string(), "bash".to_string()].into(),
            by: "the allowed-tools of /x".into(),
        };
        let l = limit(&offered, Some(narrowed));
        assert!(l.allows("grep") && !l.allows("read") && !l.allows("bash"));
        assert!(l.by.contains("plan mode") && l.by.contains("/x"));
    }
}
