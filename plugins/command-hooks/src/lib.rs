//! `command-hooks`: the command hooks people wrote for Claude Code
//! (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`), in the same format,
//! from `hooks.command-hooks` in settings. Each command runs through the
//! host's process capability as the bash tool's do, with the event as
//! JSON on stdin.
//!
//! - `PreToolUse` (a `tool-call.pre` transform, so it runs before the
//!   authority stack): exit 2, `decision: block` or `permissionDecision:
//!   deny` refuse the call; `updatedInput` rewrites it, and the stack then
//!   decides on the rewritten call. `allow` approves nothing. A command
//!   that does not answer in time refuses the call (what it would have
//!   said is unknown); another exit code is a warning and the call goes
//!   on, as in Claude Code.
//! - `PostToolUse` (an observer) runs after the call.
//! - `UserPromptSubmit` (a `receive-input.pre` transform): a block stops
//!   the prompt; what the command prints joins the prompt as context.

mod names;
mod runner;
mod settings;

use stud_sdk::hook_payloads::{Input, SlotPayload, ToolCallPost, ToolCallPre};
use stud_sdk::prelude::*;

use runner::{Verdict, run_command};
use settings::{Group, Settings, matches};

#[derive(Default)]
struct CommandHooks {
    settings: Settings,
}

impl CommandHooks {
    /// The commands of `groups` whose matcher takes `tool`.
    fn commands<'a>(
        &self,
        groups: &'a [Group],
        tool: &str,
    ) -> impl Iterator<Item = &'a settings::HookCommand> {
        let claude = names::claude_name(tool);
        let tool = tool.to_string();
        groups
            .iter()
            .filter(move |g| matches(&g.matcher, &claude, &tool))
            .flat_map(|g| g.hooks.iter())
    }

    fn timeout(&self, h: &settings::HookCommand) -> u64 {
        h.timeout
            .unwrap_or(self.settings.timeout_seconds)
            .clamp(1, 600)
    }

    fn pre_tool_use(&self, payload: Value) -> Result<HookOutcome, Error> {
        let Some(ToolCallPre { mut call }) = ToolCallPre::from_value(&payload) else {
            return Err(Error::validation(
                "payload-unreadable",
                "command-hooks could not read the call (a `tool-call.pre` payload)",
            ));
        };
        let tool = call.name.clone();
        for h in self.commands(&self.settings.pre_tool_use, &tool) {
            let input = json!({
                "hook_event_name": "PreToolUse",
                "tool_name": names::claude_name(&tool),
                "tool_input": names::claude_input(&tool, &call.arguments),
            });
            match run_command(&h.command, &input, self.timeout(h)) {
                Verdict::Block(why) => return Ok(deny(&h.command, &why)),
                Verdict::Failed(why) => {
                    return Ok(deny(&h.command, &format!("{why}; the call was not run")));
                }
                Verdict::Rewrite(updated) => call.arguments = names::stud_input(&tool, &updated),
                Verdict::Continue(_) | Verdict::Warned(_) => {}
            }
        }
        Ok(HookOutcome::Transform(ToolCallPre { call }.into_value()))
    }

    fn post_tool_use(&self, payload: Value) -> Result<HookOutcome, Error> {
        let Some(ToolCallPost { call, result }) = ToolCallPost::from_value(&payload) else {
            return Ok(HookOutcome::Observed);
        };
        for h in self.commands(&self.settings.post_tool_use, &call.name) {
            let input = json!({
                "hook_event_name": "PostToolUse",
                "tool_name": names::claude_name(&call.name),
                "tool_input": names::claude_input(&call.name, &call.arguments),
                "tool_response": {"content": result.content, "is_error": result.is_error},
            });
            let _ = run_command(&h.command, &input, self.timeout(h));
        }
        Ok(HookOutcome::Observed)
    }

    fn user_prompt_submit(&self, payload: Value) -> Result<HookOutcome, Error> {
        let Some(Input { mut input }) = Input::from_value(&payload) else {
            return Err(Error::validation(
                "payload-unreadable",
                "command-hooks could not read the prompt (a `receive-input.pre` payload)",
            ));
        };
        let hooks: Vec<_> = self
            .settings
            .user_prompt_submit
            .iter()
            .flat_map(|g| g.hooks.iter())
            .collect();
        for h in hooks {
            let event = json!({"hook_event_name": "UserPromptSubmit", "prompt": input});
            match run_command(&h.command, &event, self.timeout(h)) {
                Verdict::Block(why) | Verdict::Failed(why) => return Ok(deny(&h.command, &why)),
                Verdict::Continue(text) if !text.is_empty() => {
                    input.push_str(&format!(
                        "\n\n<hook-context command=\"{}\">\n{}\n</hook-context>",
                        h.command.replace('"', "%22"),
                        text.replace("</hook-context", "<\\/hook-context")
                    ));
                }
                _ => {}
            }
        }
        Ok(HookOutcome::Transform(Input { input }.into_value()))
    }
}

fn deny(command: &str, why: &str) -> HookOutcome {
    HookOutcome::Deny(Error::validation(
        "hook-blocked",
        format!("the hook command `{command}` stopped it: {why}"),
    ))
}

impl Hook for CommandHooks {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.settings = Settings::from_config(config)?;
        Ok(())
    }

    fn run(&mut self, slot: HookSlot, payload: Value) -> Result<HookOutcome, Error> {
        match slot_text(slot).as_str() {
            "tool-call.pre" if !self.settings.pre_tool_use.is_empty() => self.pre_tool_use(payload),
            "tool-call.post" if !self.settings.post_tool_use.is_empty() => {
                self.post_tool_use(payload)
            }
            "receive-input.pre" if !self.settings.user_prompt_submit.is_empty() => {
                self.user_prompt_submit(payload)
            }
            "tool-call.post" => Ok(HookOutcome::Observed),
            // Nothing configured for this event: no change.
            _ => Ok(HookOutcome::Transform(payload)),
        }
    }
}

stud_sdk::export_hook!(CommandHooks);
