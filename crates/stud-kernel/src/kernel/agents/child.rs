//! Building a child session from its parent and an agent definition. The
//! child shares the parent's loaded extensions (so its network, file and
//! secret grants are theirs, never more) and gets less of everything
//! else: the tools both allow, a mode no looser, no approvals, a share of
//! the budget, one level less of depth.

use crate::kernel::act::ActParts;
use std::collections::BTreeSet;

use crate::kernel::agent_catalog::AgentDefinition;
use crate::kernel::agent_catalog::TASK_TOOL;
use crate::kernel::conversation::Conversation;
use crate::kernel::persist::{Persistence, now_ms};
use crate::kernel::session::Session;
use crate::kernel::usage::UsageLedger;

/// Why a child could not be started (the `task` call's error result).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpawnError {
    #[error(
        "agent `{agent}` cannot start: `{path}` is at the depth limit of {max} sessions (settings `agents.maxDepth`); do the work here instead"
    )]
    Depth {
        agent: String,
        path: String,
        max: u32,
    },
    #[error("agent `{agent}` ({file}): `model`: {reason}")]
    Model {
        agent: String,
        file: String,
        reason: String,
    },
    #[error(
        "agent `{agent}` cannot start: the session's cost budget is spent (${spent:.4} of ${budget:.4})"
    )]
    Budget {
        agent: String,
        spent: f64,
        budget: f64,
    },
}

impl ActParts<'_> {
    /// A child for `def`, answering this session's call `call_id`.
    /// `envelope`: the tools of the stage the call was made in, if any.
    pub(crate) fn spawn_child(
        &self,
        def: &AgentDefinition,
        call_id: &str,
        envelope: Option<&BTreeSet<String>>,
    ) -> Result<Session, SpawnError> {
        let max = self.agents.max_depth;
        let depth = self.lineage.depth + 1;
        if depth > max {
            return Err(SpawnError::Depth {
                agent: def.name.clone(),
                path: self.lineage.path.clone(),
                max,
            });
        }
        let lineage = self.lineage.child(self.id, call_id, &def.name);
        let id = self.lineage.next_child_id(self.id);
        let bus = self.bus.scoped(&lineage.path);
        let model = match &def.model {
            None => self.roster.model.clone(),
            Some(m) => self
                .roster
                .find_model(m)
                .map_err(|e| SpawnError::Model {
                    agent: def.name.clone(),
                    file: def.source.describe(),
                    reason: e.to_string(),
                })?
                .id
                .clone(),
        };
        let tools = self.roster.tools.narrowed(|name| {
            def.allows_tool(name)
                && envelope.is_none_or(|e| e.contains(name))
                && (name != TASK_TOOL || depth < max)
        });
        let mode = def.mode.unwrap_or(self.authority.mode());
        let authority = self.authority.child(mode, &lineage.path, bus.clone());
        let budget = self.child_budget(def)?;
        let mut config = self.config.clone();
        config.system_prompt = Some(def.prompt.clone());
        config.max_iterations = def
            .max_iterations
            .unwrap_or(self.agents.default_iterations)
            .min(self.config.max_iterations);
        config.max_cost_usd = budget;
        config.model = Some(model.clone());
        let mut conversation = Conversation::new(bus.clone());
        conversation.log = self.persistence.map(|p| Persistence {
            store: p.store.clone(),
            created_ms: now_ms(),
            project_root: p.project_root.clone(),
            loaded: p.loaded.clone(),
            title: String::new(),
            wrote: Default::default(),
            manifests: p.manifests.clone(),
            last_manifest: Default::default(),
        });
        Ok(Session {
            id,
            roster: self.roster.child(tools, model, bus.clone()),
            conversation,
            ledger: UsageLedger::new(self.config.pricing.clone(), budget),
            bus,
            authority,
            interactions: self.interactions.clone(),
            config,
            reloader: None,
            pending_reloads: Vec::new(),
            workflow: None,
            workflow_position: None,
            extension_set: None,
            steering: Default::default(),
            // The parent's servers stay the parent's: the child keeps the
            // MCP tools it was given and takes up no changes.
            mcp: Default::default(),
            agents: self.agents.clone(),
            lineage,
            // Its calls count in the extensions' meters, reported by the
            // parent's turn.
            metering: Default::default(),
            editor: self.editor.cloned(),
            turn: Default::default(),
            plan: false,
            first_request: Default::default(),
            // Its changes belong to the parent's turn, whose snapshot was
            // taken before the `task` call.
            checkpoints: None,
        })
    }

    /// A child's cost budget: its share of what this session has left
    /// (children already finished this turn counted), at most what its
    /// definition says; `None` when neither bounds it.
    fn child_budget(&self, def: &AgentDefinition) -> Result<Option<f64>, SpawnError> {
        let share = match self.config.max_cost_usd {
            None => None,
            Some(budget) => {
                let spent = self.ledger.cost_usd + self.children_cost();
                let left = budget - spent;
                if left <= 0.0 {
                    return Err(SpawnError::Budget {
                        agent: def.name.clone(),
                        spent,
                        budget,
                    });
                }
                Some(left * self.agents.budget_share)
            }
        };
        Ok(match (share, def.max_cost_usd) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    fn children_cost(&self) -> f64 {
        self.turn.children().cost_usd
    }
}
