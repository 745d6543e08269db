//! What lives for one turn: filled before it (an editor's images) and
//! while it runs (children's spend, the context warning), and taken whole
//! when it closes, so nothing of one turn leaks into the next.
//!
//! Steering is not here: it is a channel whose sending end a front end
//! holds across turns (`Session::steering`); what it carries is taken at
//! the running turn's stage boundaries.

use std::sync::Mutex;

use super::usage::ChildSpend;
use crate::runtime::domain::{Image, Usage};

#[derive(Default)]
pub struct TurnContext {
    /// Images that go with the turn's input.
    pub(crate) images: Vec<Image>,
    /// What the person's `!command`s printed since the last prompt: added
    /// to the next prompt when it is made ready (`with_shell_notes`).
    pub(crate) shell_notes: Vec<String>,
    /// What the turn's children spent: charged to the session when the
    /// turn closes, counted by its budget before then. Behind a lock
    /// because children run beside each other on a shared session.
    pub(crate) child_spend: Mutex<ChildSpend>,
    /// The context-window warning was shown in this turn (once a turn).
    pub(crate) context_warned: bool,
    /// The tools this turn may use, when something narrowed them (a
    /// Markdown command's `allowed-tools`): only these are offered, and a
    /// call of another is refused.
    pub(crate) tools: Option<ToolLimit>,
    /// The turn runs in plan mode (the system prompt asks for a plan).
    pub(crate) plan: bool,
}

/// Tools a turn is narrowed to, and who narrowed it (for the refusal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLimit {
    pub allowed: std::collections::BTreeSet<String>,
    pub by: String,
}

impl ToolLimit {
    pub fn allows(&self, tool: &str) -> bool {
        self.allowed.contains(tool)
    }
}

impl TurnContext {
    /// The children's spend so far.
    pub(crate) fn children(&self) -> ChildSpend {
        self.child_spend
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Add what one child spent.
    pub(crate) fn charge_child(&self, usage: &Usage, cost_usd: f64) {
        let mut spend = self.child_spend.lock().unwrap_or_else(|p| p.into_inner());
        super::usage::add_usage(&mut spend.usage, usage);
        spend.cost_usd += cost_usd;
    }
}
