//! `plan-build-review`: the reference workflow (the spec's "Ralph" case).
//!
//! discovery (read-only, cap 5) -> decompose (may write notes, cap 10) ->
//! build_a || build_b (full tools, cap 50 each, one unit each) -> review
//! (the join: read-only plus one `bash` run granted on request, cap 10) ->
//! complete (no tools, cap 3), whose result is the workflow's report.

mod stages;

use serde::{Deserialize, Serialize};
use stud_sdk::kinds::state_machine::{
    AssertOutcome, Execution, Gate, NextResult, StageDefinition, ToolProposal, ToolVerdict,
};
use stud_sdk::prelude::*;

/// What survives a reload or a resume (the state slot).
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Slot {
    current_stage: String,
    attempts: std::collections::BTreeMap<String, u32>,
    /// Stages that already used their one `bash` grant.
    granted_bash_stages: Vec<String>,
}

#[derive(Default)]
struct PlanBuildReview;

fn slot() -> Slot {
    host::state::read().ok().flatten().unwrap_or_default()
}

fn save(s: &Slot) {
    // The slot is bookkeeping: failing to write it must not stop a stage.
    let _ = host::state::write(s);
}

impl StateMachine for PlanBuildReview {
    fn stages(&self) -> Vec<StageDefinition> {
        stages::all()
    }

    fn entry_stage(&self) -> String {
        stages::DISCOVERY.into()
    }

    fn setup(&mut self, stage: &str, mut ctx: Value) -> Result<Value, Error> {
        // A new run of the workflow starts a clean slot.
        let mut s = if stage == stages::DISCOVERY {
            Slot::default()
        } else {
            slot()
        };
        s.current_stage = stage.to_string();
        *s.attempts.entry(stage.to_string()).or_default() += 1;
        save(&s);
        // Each builder gets its unit of the plan as `ctx.unit`.
        let index = match stage {
            stages::BUILD_A => Some(0),
            stages::BUILD_B => Some(1),
            _ => None,
        };
        if let (Some(i), Some(map)) = (index, ctx.as_object_mut()) {
            let unit = map
                .get("results")
                .and_then(|r| r.pointer(&format!("/{}/units/{i}", stages::DECOMPOSE)))
                .cloned()
                .unwrap_or(Value::Null);
            map.insert("unit".into(), unit);
        }
        Ok(ctx)
    }

    fn check_gate(&mut self, stage: &str, ctx: &Value) -> Result<Gate, Error> {
        // A plan with one unit leaves the second builder nothing to do.
        if matches!(stage, stages::BUILD_A | stages::BUILD_B) && ctx["unit"].is_null() {
            return Ok(Gate::Skip);
        }
        Ok(Gate::Proceed)
    }

    fn assert(
        &mut self,
        stage: &str,
        _ctx: &Value,
        cap_hit: bool,
        completion: Option<Value>,
    ) -> Result<AssertOutcome, Error> {
        Ok(match (stage, completion) {
            // No plan, no build: try the stage again.
            (stages::DECOMPOSE, None) => AssertOutcome::Retry,
            (_, None) if cap_hit => AssertOutcome::Retry,
            _ => AssertOutcome::Ok,
        })
    }

    fn next(&mut self, stage: &str, _ctx: &Value) -> Result<NextResult, Error> {
        let seq = |s: &str| NextResult {
            next_stages: vec![s.to_string()],
            execution: Execution::Sequential,
            join: None,
        };
        Ok(match stage {
            stages::DISCOVERY => seq(stages::DECOMPOSE),
            stages::DECOMPOSE => NextResult {
                next_stages: vec![stages::BUILD_A.into(), stages::BUILD_B.into()],
                execution: Execution::Parallel,
                join: Some(stages::REVIEW.into()),
            },
            stages::REVIEW => seq(stages::COMPLETE),
            _ => NextResult {
                next_stages: vec![],
                execution: Execution::Sequential,
                join: None,
            },
        })
    }

    /// Review may run `bash` once (to run the tests, say); later runs are
    /// the user's call. Nothing else leaves a stage's envelope.
    fn grant_stage_tool(&mut self, proposal: ToolProposal) -> ToolVerdict {
        let mut s = slot();
        if proposal.tool != "bash" || s.current_stage != stages::REVIEW {
            return ToolVerdict::Deny;
        }
        if s.granted_bash_stages.iter().any(|g| g == stages::REVIEW) {
            return ToolVerdict::Defer;
        }
        s.granted_bash_stages.push(stages::REVIEW.into());
        save(&s);
        ToolVerdict::Approve
    }
}

stud_sdk::export_state_machine!(PlanBuildReview);
