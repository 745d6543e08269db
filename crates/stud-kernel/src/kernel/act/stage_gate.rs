//! The first layer of the authority stack: a state machine's stage. A tool
//! inside the stage's envelope is approved without the mode gate; outside
//! it the machine's `grant-stage-tool` decides, and only a grant token
//! issued for exactly this call and used once approves it. A deny holds in
//! every mode, yolo included.

use crate::kernel::act::ActParts;
use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::kernel::authority::{Mode, Proposal};
use crate::kernel::interaction::Answer;
use crate::kernel::workflow_def::grants::{GrantTuple, Grants, args_digest};
use crate::runtime::Extension;
use crate::runtime::domain::{Approval, InteractionKind, InteractionStatus};
use crate::runtime::domain::{ToolProposal, ToolVerdict};
use stud_protocol::events::{Decision, KernelEvent, StageAudit};

/// The stage execution a call is proposed in.
pub(crate) struct StageAuthority {
    pub sm: Arc<Extension>,
    pub stage_id: String,
    pub execution_id: String,
    pub attempt: u32,
    /// `None`: every session tool is in the envelope.
    pub allowed: Option<BTreeSet<String>>,
    pub grants: Arc<Grants>,
}

/// The state machine's answer for one call.
pub(crate) enum StageDecision {
    Approve,
    Deny { code: &'static str, reason: String },
}

impl StageAuthority {
    pub fn in_envelope(&self, tool: &str) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(tool))
    }
}

impl ActParts<'_> {
    pub(crate) async fn stage_decide(
        &self,
        stage: &StageAuthority,
        p: &Proposal<'_>,
        args: &Value,
    ) -> StageDecision {
        let tuple = GrantTuple {
            execution_id: stage.execution_id.clone(),
            attempt: stage.attempt,
            proposal_id: p.call_id.to_string(),
            tool: p.tool.to_string(),
            args_digest: args_digest(args),
        };
        let (decision, reason) = if stage.in_envelope(p.tool) {
            (
                StageDecision::Approve,
                format!("in the envelope of stage `{}`", stage.stage_id),
            )
        } else {
            self.out_of_envelope(stage, p, &tuple).await
        };
        let (word, code) = match &decision {
            StageDecision::Approve => (Decision::Approve, ""),
            StageDecision::Deny { code, .. } => (Decision::Deny, *code),
        };
        self.bus.record(KernelEvent::ApprovalDecided {
            call_id: p.call_id.into(),
            tool: p.tool.into(),
            key: p.key.into(),
            decision: word,
            layer: "state-machine".into(),
            reason,
            mode: None,
            stage: Some(StageAudit {
                code: code.into(),
                state_machine: stage.sm.id().to_string(),
                stage: stage.stage_id.clone(),
                stage_execution_id: tuple.execution_id,
                attempt: tuple.attempt.into(),
                proposal_id: tuple.proposal_id,
                args_digest: tuple.args_digest,
            }),
        });
        decision
    }

    async fn out_of_envelope(
        &self,
        stage: &StageAuthority,
        p: &Proposal<'_>,
        tuple: &GrantTuple,
    ) -> (StageDecision, String) {
        let deny = |code: &'static str, reason: String| {
            (
                StageDecision::Deny {
                    code,
                    reason: reason.clone(),
                },
                reason,
            )
        };
        let proposal = ToolProposal {
            stage_execution_id: tuple.execution_id.clone(),
            attempt: tuple.attempt,
            proposal_id: tuple.proposal_id.clone(),
            tool: tuple.tool.clone(),
            args_digest: tuple.args_digest.clone(),
        };
        let verdict = match stage.sm.sm_grant_stage_tool(&proposal).await {
            Ok(v) => v,
            Err(e) => {
                return deny(
                    "stage-tool-denied",
                    format!(
                        "`{}` is outside stage `{}` and the state machine failed to decide: {e}",
                        p.tool, stage.stage_id
                    ),
                );
            }
        };
        let approved = match verdict {
            ToolVerdict::Approve => "the state machine granted it",
            ToolVerdict::Deny => {
                return deny(
                    "stage-tool-denied",
                    format!(
                        "`{}` is outside the tools of stage `{}` and the state machine denied it",
                        p.tool, stage.stage_id
                    ),
                );
            }
            ToolVerdict::Defer => match self.ask_for_stage_tool(stage, p).await {
                Ok(who) => who,
                Err(reason) => return deny("stage-tool-denied", reason),
            },
        };
        let used = stage
            .grants
            .issue(tuple.clone())
            .and_then(|token| stage.grants.consume(&token, tuple));
        match used {
            Ok(()) => (
                StageDecision::Approve,
                format!("{approved} (one-use grant)"),
            ),
            Err(e) => deny(e.code(), format!("`{}`: {e}", p.tool)),
        }
    }

    /// `defer`: the person decides; headless, only `--yolo` says yes.
    async fn ask_for_stage_tool(
        &self,
        stage: &StageAuthority,
        p: &Proposal<'_>,
    ) -> Result<&'static str, String> {
        if self.authority.mode() == Mode::Yolo {
            return Ok("the state machine deferred and yolo mode approved");
        }
        let ask = InteractionKind::Approve(Approval {
            tool: p.tool.to_string(),
            approval_key: p.key.to_string(),
            description: format!(
                "{} (outside the tools of stage `{}`)",
                p.description, stage.stage_id
            ),
        });
        match self.interactions.request(ask).await {
            Answer::Response(r) if r.status == InteractionStatus::Accepted => {
                Ok("the state machine deferred and the user approved")
            }
            Answer::Halt => Err(format!(
                "`{}` is outside stage `{}`; the state machine deferred to the user and this run is headless (use --yolo to accept deferred grants)",
                p.tool, stage.stage_id
            )),
            Answer::Response(_) => Err(format!(
                "`{}` is outside stage `{}` and the user declined it",
                p.tool, stage.stage_id
            )),
        }
    }
}
