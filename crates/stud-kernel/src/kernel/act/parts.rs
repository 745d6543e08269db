//! What an Act's stages, the context providers and the subagents may use
//! of a session: its parts, borrowed for the Act. Not the conversation
//! (an Act reaches its transcript only through its [`Lane`](super::Lane)),
//! not the reloader, the workflow or the steering queue, which belong to
//! the turn and the workflow around the Act.

use std::sync::Arc;

use crate::kernel::Authority;
use crate::kernel::agent_catalog::{AgentCatalog, Lineage};
use crate::kernel::checkpoints::Checkpoints;
use crate::kernel::editor_files::EditorRoute;
use crate::kernel::events::Bus;
use crate::kernel::first_request::FirstRequest;
use crate::kernel::interaction::Interactions;
use crate::kernel::persist::Persistence;
use crate::kernel::roster::Roster;
use crate::kernel::session::{Session, SessionConfig};
use crate::kernel::turn_context::TurnContext;
use crate::kernel::turn_status::{TurnStatus, fail};
use crate::kernel::usage::UsageLedger;
use crate::runtime::domain::{RequestParams, Usage};
use stud_protocol::events::KernelEvent;

#[derive(Clone, Copy)]
pub(crate) struct ActParts<'a> {
    pub id: &'a str,
    pub roster: &'a Roster,
    pub bus: &'a Bus,
    pub config: &'a SessionConfig,
    pub authority: &'a Authority,
    pub interactions: &'a Arc<Interactions>,
    pub agents: &'a Arc<AgentCatalog>,
    pub lineage: &'a Lineage,
    pub first_request: &'a FirstRequest,
    pub editor: Option<&'a EditorRoute>,
    /// The running turn: its children's spend.
    pub turn: &'a TurnContext,
    /// What the session spent so far (budgets, a child's share).
    pub ledger: &'a UsageLedger,
    /// Per-extension figures (a provider's token budget).
    pub metering: &'a crate::kernel::metering::Metering,
    /// Where the session is kept (a child session is kept beside it).
    pub persistence: Option<&'a Persistence>,
    /// Snapshots before the turn's changes (none in a child).
    pub checkpoints: Option<&'a Arc<Checkpoints>>,
}

impl Session {
    /// The parts an Act works with.
    pub(crate) fn act_parts(&self) -> ActParts<'_> {
        ActParts {
            id: &self.id,
            roster: &self.roster,
            bus: &self.bus,
            config: &self.config,
            authority: &self.authority,
            interactions: &self.interactions,
            agents: &self.agents,
            lineage: &self.lineage,
            first_request: &self.first_request,
            editor: self.editor.as_ref(),
            turn: &self.turn,
            ledger: &self.ledger,
            metering: &self.metering,
            persistence: self.conversation.log.as_ref(),
            checkpoints: self.checkpoints.as_ref(),
        }
    }
}

impl ActParts<'_> {
    /// Model parameters of every request.
    pub(crate) fn request_params(&self) -> RequestParams {
        RequestParams {
            model: self.roster.model.clone(),
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            thinking: self.config.thinking,
            cache_hints: self.config.cache_hints,
        }
    }

    pub(crate) fn provider_id(&self) -> &str {
        self.roster.provider_id()
    }

    /// Before a call that may write: the tree's snapshot, once a turn. A
    /// snapshot that fails does not stop the turn; it says the turn cannot
    /// be undone.
    pub(crate) async fn checkpoint(&self) {
        let Some(c) = self.checkpoints.cloned() else {
            return;
        };
        let taken = tokio::task::spawn_blocking(move || c.before_change()).await;
        let error = match taken {
            Ok(Ok(_)) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        self.bus.publish(KernelEvent::Diagnostic {
            level: stud_protocol::events::Level::Warn,
            message: format!("{error}; this turn's changes cannot be undone with /undo"),
        });
    }

    /// `budget-exceeded` once the session (with this turn's `usage`) has
    /// cost its budget.
    pub(crate) fn check_budget(&self, usage: &Usage) -> Result<(), TurnStatus> {
        let provider = &self.roster.provider;
        if let Some(budget) = provider.manifest.limits.tokens_per_session {
            let spent = self.metering.provider_tokens(provider.id().as_str())
                + crate::kernel::usage::prompt_tokens(usage)
                + usage.output_tokens;
            if spent >= u64::from(budget) {
                return Err(fail(
                    "token-budget",
                    format!(
                        "provider `{}` has spent {spent} tokens in this session, its budget of {budget} (the lower of its manifest's `limits.tokens-per-session` and settings `budget.extensions.{}.tokensPerSession`); start a new session or raise the budget",
                        provider.id(),
                        provider.id()
                    ),
                ));
            }
        }
        let children = self.turn.children().cost_usd;
        self.ledger
            .check_budget(&self.roster.model, usage, children)
            .map_err(|e| {
                self.bus.record(KernelEvent::BudgetExceeded {
                    spent_usd: e.spent,
                    budget_usd: e.budget,
                });
                fail("budget-exceeded", e.to_string())
            })
    }
}
