//! Context providers at COMPOSE_REQUEST: each contributes fragments
//! (system messages, prompt fragments, tool hints) with a priority and a
//! token budget. They are clipped to their budgets, ordered by priority
//! and added to the system prompt, so they are pinned: compaction never
//! touches them. The isolation guard drops any fragment that carries a
//! secret or an environment value (context providers cannot read the
//! environment anyway; the guard catches one that found a value in a
//! file).

use super::compaction::estimate_tokens;
use crate::kernel::act::ActParts;
use crate::runtime::domain::{ComposeContext, FragmentKind};
use stud_protocol::events::KernelEvent;

/// Environment variables whose values are too common to be treated as
/// forbidden content.
const HARMLESS_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "PWD",
    "OLDPWD",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "HOSTNAME",
    "SHLVL",
    "_",
    "TZ",
    "STUD_HOME",
    "STUD_CACHE_DIR",
    "STUD_SDK_DIR",
    "CARGO_TARGET_TMPDIR",
];

/// A value from stud's environment that `text` contains (8+ characters).
fn env_value_in(text: &str) -> Option<String> {
    std::env::vars()
        .filter(|(k, v)| v.len() >= 8 && !HARMLESS_ENV.contains(&k.as_str()))
        .find(|(_, v)| text.contains(v.as_str()))
        .map(|(k, _)| k)
}

fn clip(text: &str, budget: u32) -> String {
    let max = (budget as usize).saturating_mul(4);
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut to its {budget}-token budget]", &text[..end])
}

impl ActParts<'_> {
    /// The system text the context providers add for this request.
    pub(crate) async fn context_fragments(&self, iteration: u32) -> Option<String> {
        if self.roster.context_providers.is_empty() {
            return None;
        }
        let ctx = ComposeContext {
            session_id: self.id.to_string(),
            turn: self.ledger.turns as u32,
            project_dir: Some("/project".into()),
        };
        let mut fragments = Vec::new();
        // One whose project files are all absent would add nothing.
        for ext in self
            .roster
            .context_providers
            .iter()
            .filter(|e| e.finds_context())
        {
            match ext.context_provide(&ctx).await {
                Ok(list) => fragments.extend(list.into_iter().map(|f| (ext.id().clone(), f))),
                Err(e) => self.bus.record(KernelEvent::ContextFailed {
                    extension: ext.id().to_string(),
                    error: e.to_string(),
                }),
            }
        }
        fragments.sort_by_key(|(_, f)| std::cmp::Reverse(f.priority));
        let mut parts = Vec::new();
        for (id, f) in fragments {
            let leak = if self.bus.redact(&f.content) != f.content {
                Some("a secret value".to_string())
            } else {
                env_value_in(&f.content)
                    .map(|var| format!("the value of the environment variable {var}"))
            };
            if let Some(what) = leak {
                self.bus.record(
KernelEvent::ContextBlocked {
                    extension: id.to_string(),
                    reason: format!("the fragment contains {what}; environment values and secrets never enter the model's context"),
                });
                continue;
            }
            let text = clip(&f.content, f.token_budget);
            let label = match f.kind {
                FragmentKind::SystemMessage => "",
                FragmentKind::PromptFragment => "Context:\n",
                FragmentKind::ToolHint => "Tool hint:\n",
            };
            self.bus.publish(KernelEvent::ContextFragment {
                extension: id.to_string(),
                tokens: estimate_tokens(&text),
                iteration: iteration.into(),
            });
            parts.push(format!("{label}{text}"));
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_on_char_boundaries() {
        let s = "é".repeat(10);
        let c = clip(&s, 1);
        assert!(c.starts_with("éé") && c.contains("budget"), "{c}");
        assert_eq!(clip("short", 10), "short");
        assert_eq!(estimate_tokens("abcdefgh"), 2);
    }
}
