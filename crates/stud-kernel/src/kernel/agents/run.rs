//! Running a `task` call: the child's turn runs under the call's
//! cancellation token (Ctrl-C or the parent's cancellation stops it), its
//! answer becomes the call's result, its failure the call's error result,
//! and what it spent is rolled up into the parent.

use crate::kernel::act::ActParts;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::kernel::tool_outcome::{Delegated, Ran};
use crate::kernel::turn_status::{TurnOutcome, TurnStatus};
use crate::kernel::usage::{usage_event, usage_json};
use crate::runtime::domain::ToolOutput;
use crate::runtime::domain::{ResultPart, ToolCall};
use stud_protocol::events::KernelEvent;

/// The child's turn, boxed: a child's `task` call runs a grandchild's
/// turn, so the future refers to itself.
type TurnFuture<'a> = Pin<Box<dyn Future<Output = TurnOutcome> + 'a>>;

impl ActParts<'_> {
    pub(crate) async fn run_task(
        &self,
        call: &ToolCall,
        envelope: Option<&BTreeSet<String>>,
        cancel: &CancellationToken,
    ) -> Delegated {
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let text = |k: &str| args[k].as_str().unwrap_or_default().to_string();
        let (name, prompt, description) = (text("agent"), text("prompt"), text("description"));
        let failed = |code: &str, message: String| {
            Delegated::Ran(Ran::Failed {
                class: "ToolTerminal".into(),
                code: code.into(),
                detail: message.clone(),
                message,
            })
        };
        let Some(def) = self.agents.get(&name) else {
            return failed(
                "agent-unknown",
                format!(
                    "there is no agent `{name}`; agents: {}",
                    self.agents.names().join(", ")
                ),
            );
        };
        let mut child = match self.spawn_child(def, &call.id, envelope) {
            Ok(c) => c,
            Err(e) => return failed("agent-unavailable", e.to_string()),
        };
        if let Some(sm) = &def.state_machine
            && let Err(e) =
                crate::kernel::workflow::attach::attach(&mut child, Some(sm), None).await
        {
            return failed(
                "agent-unavailable",
                format!(
                    "agent `{name}` ({}): `stateMachine`: {e}",
                    def.source.describe()
                ),
            );
        }
        let path = child.lineage.path.clone();
        self.bus.record(KernelEvent::AgentStarted {
            path: path.clone(),
            name: name.clone(),
            session_id: child.id.clone(),
            parent_session_id: self.id.to_string(),
            call_id: call.id.clone(),
            description,
            tools: child
                .roster
                .tools
                .names()
                .into_iter()
                .map(Into::into)
                .collect(),
            mode: child.authority.mode().as_str().into(),
            model: child.roster.model.clone(),
        });
        let started = Instant::now();
        // A plain turn unless the definition attached a state machine.
        let turn: TurnFuture<'_> = Box::pin(child.run_workflow(&prompt, cancel));
        let outcome = turn.await;
        child.roster.hooks.drain().await;
        let (usage, cost) = (child.ledger.usage, child.ledger.cost_usd);
        self.turn.charge_child(&usage, cost);
        let code = match &outcome.status {
            TurnStatus::Failed { code, .. } => code.clone(),
            _ => String::new(),
        };
        self.bus.record(KernelEvent::AgentFinished {
            path: path.clone(),
            session_id: child.id.clone(),
            status: outcome.status.result(),
            code,
            iterations: outcome.iterations.into(),
            usage: usage_event(&usage),
            cost_usd: cost,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        let details = json!({
            "agent": name,
            "path": path,
            "session_id": child.id,
            "status": outcome.status.as_str(),
            "iterations": outcome.iterations,
            "usage": usage_json(&usage),
            "cost_usd": cost,
        });
        match outcome.status {
            TurnStatus::Completed => {
                let answer = if outcome.text.trim().is_empty() {
                    format!("(agent `{name}` finished without a final answer)")
                } else {
                    outcome.text
                };
                Delegated::Ran(Ran::Ok(ToolOutput {
                    content: vec![ResultPart::Text(answer)],
                    details: Some(details.to_string()),
                }))
            }
            TurnStatus::Cancelled => Delegated::Ran(Ran::Cancelled),
            // The tool as named, so the hint (`--allow tool:key`) works: a
            // child starts from its parent's allowlist.
            halted @ TurnStatus::Halted { .. } => Delegated::Halted(halted),
            TurnStatus::Failed { code, message } => {
                let code = match code.as_str() {
                    "loop-bound-exceeded" => "agent-iterations-exhausted",
                    "budget-exceeded" => "agent-budget-exhausted",
                    _ => "agent-failed",
                };
                failed(code, format!("agent `{name}` ({path}) stopped: {message}"))
            }
        }
    }
}
