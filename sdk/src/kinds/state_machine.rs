//! State machines: staged workflows that govern a session's tool use.
//!
//! The kernel runs each stage through Setup, Init, CheckGate, Act, Assert,
//! Exit and Next: your `setup` may add keys to the stage context, the stage
//! body is rendered with `{{ctx.key}}` / `${ctx.key}` placeholders, Act is
//! the model loop limited to the stage's `allowed_tools` plus its
//! completion tool, and `next` names what follows (sequential, or at least
//! two stages in parallel with an optional join). A tool proposed outside
//! the envelope comes to `grant_stage_tool`: `Approve` grants this one call
//! once, `Deny` refuses it in every security mode, `Defer` asks the person.
//! The kernel owns `ctx.input` (the task), `ctx.results` (each finished
//! stage's completion arguments) and, in a join, `ctx.siblings`.
//! `docs/workflows.md` walks through writing one.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::state_machine_types::{
    AssertOutcome, Execution, Gate, NextResult, RetryPolicy, StageDefinition, ToolProposal,
    ToolVerdict,
};

/// A state machine. Only `stages` and `entry_stage` are required; the
/// defaults follow the runtime spec (proceed, retry on cap hit, stop after
/// the stage, deny tools outside the envelope).
pub trait StateMachine: Default + 'static {
    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// The extension is being retired: a reload replaced it, or the
    /// session ended. Release what `init` took; `dispose` follows. Bounded
    /// by the call deadline; an error is logged, not shown.
    fn deactivate(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The last call before the instance is dropped (after `deactivate`).
    fn dispose(&mut self) {}

    /// Every stage this machine can enter, declared up front.
    fn stages(&self) -> Vec<StageDefinition>;
    /// The stage a session starts in.
    fn entry_stage(&self) -> String;

    /// Populate the stage context (the only phase that may write it).
    /// Default: unchanged.
    fn setup(&mut self, _stage: &str, ctx: Value) -> Result<Value, Error> {
        Ok(ctx)
    }

    /// Whether the stage may run now. Default: proceed.
    fn check_gate(&mut self, _stage: &str, _ctx: &Value) -> Result<Gate, Error> {
        Ok(Gate::Proceed)
    }

    /// Judge the stage's result. Default: retry on cap hit, otherwise ok.
    fn assert(
        &mut self,
        _stage: &str,
        _ctx: &Value,
        cap_hit: bool,
        _completion: Option<Value>,
    ) -> Result<AssertOutcome, Error> {
        Ok(if cap_hit {
            AssertOutcome::Retry
        } else {
            AssertOutcome::Ok
        })
    }

    /// Which stages follow. Default: none, so the session stops here.
    fn next(&mut self, _stage: &str, _ctx: &Value) -> Result<NextResult, Error> {
        Ok(NextResult {
            next_stages: vec![],
            execution: Execution::Sequential,
            join: None,
        })
    }

    /// A tool outside the stage's envelope was proposed. Default: deny.
    fn grant_stage_tool(&mut self, _proposal: ToolProposal) -> ToolVerdict {
        ToolVerdict::Deny
    }
}
