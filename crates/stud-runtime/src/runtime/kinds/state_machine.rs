use super::{guest_call, infallible};
use crate::runtime::contract::v0_1::stud::extension::state_machine_types::{
    AssertOutcome, Gate, NextResult, StageDefinition, ToolProposal, ToolVerdict,
};
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn sm_stages(&self) -> Result<Vec<StageDefinition>, CallError> {
        guest_call!(self, StateMachine, "stages", |g, store| infallible(
            g.call_stages(store).await
        ))
    }

    pub async fn sm_entry_stage(&self) -> Result<String, CallError> {
        guest_call!(self, StateMachine, "entry-stage", |g, store| infallible(
            g.call_entry_stage(store).await
        ))
    }

    pub async fn sm_setup(&self, stage: &str, ctx: &str) -> Result<String, CallError> {
        let (stage, ctx) = (stage.to_string(), ctx.to_string());
        guest_call!(self, StateMachine, "setup", |g, store| g
            .call_setup(store, &stage, &ctx)
            .await)
    }

    pub async fn sm_check_gate(&self, stage: &str, ctx: &str) -> Result<Gate, CallError> {
        let (stage, ctx) = (stage.to_string(), ctx.to_string());
        guest_call!(self, StateMachine, "check-gate", |g, store| g
            .call_check_gate(store, &stage, &ctx)
            .await)
    }

    pub async fn sm_assert(
        &self,
        stage: &str,
        ctx: &str,
        cap_hit: bool,
        completion: Option<&str>,
    ) -> Result<AssertOutcome, CallError> {
        let completion = completion.map(str::to_string);
        let (stage, ctx) = (stage.to_string(), ctx.to_string());
        guest_call!(self, StateMachine, "assert", |g, store| {
            g.call_assert(store, &stage, &ctx, cap_hit, completion.as_ref())
                .await
        })
    }

    pub async fn sm_next(&self, stage: &str, ctx: &str) -> Result<NextResult, CallError> {
        let (stage, ctx) = (stage.to_string(), ctx.to_string());
        guest_call!(self, StateMachine, "next", |g, store| g
            .call_next(store, &stage, &ctx)
            .await)
    }

    pub async fn sm_grant_stage_tool(
        &self,
        proposal: &ToolProposal,
    ) -> Result<ToolVerdict, CallError> {
        let proposal = proposal.clone();
        guest_call!(self, StateMachine, "grant-stage-tool", |g, store| {
            infallible(g.call_grant_stage_tool(store, &proposal).await)
        })
    }
}
