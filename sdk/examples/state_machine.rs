//! A state machine (workflow): `plan` (read-only) then `build`. Each stage
//! ends when the model calls its completion tool; `build` sees the plan as
//! `{{ctx.results.plan.steps}}`. Attach it with `stud run --sm <id>`.

use stud_sdk::kinds::state_machine::{
    AssertOutcome, Execution, NextResult, RetryPolicy, StageDefinition,
};
use stud_sdk::prelude::*;

const PLAN: &str = "plan";
const BUILD: &str = "build";

#[derive(Default)]
struct PlanThenBuild;

fn stage(id: &str, body: &str, tools: Option<&[&str]>, done: (&str, Value)) -> StageDefinition {
    StageDefinition {
        id: id.into(),
        name: id.into(),
        body: body.into(),
        allowed_tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        completion_tool: done.0.into(),
        completion_schema: done.1.to_string(),
        turn_cap: 20,
        retry_policy: Some(RetryPolicy {
            max_attempts: 2,
            backoff_ms: 0,
        }),
    }
}

impl StateMachine for PlanThenBuild {
    fn stages(&self) -> Vec<StageDefinition> {
        vec![
            stage(
                PLAN,
                "Plan the task without changing anything: {{ctx.input}}\nCall `submit_plan` with the steps.",
                Some(&["read", "list", "glob", "grep"]),
                (
                    "submit_plan",
                    json!({"type": "object", "required": ["steps"], "properties": {"steps": {"type": "array", "items": {"type": "string"}}}}),
                ),
            ),
            stage(
                BUILD,
                "Carry out the plan: {{ctx.results.plan.steps}}\nThen call `done` with a summary.",
                None,
                (
                    "done",
                    json!({"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}),
                ),
            ),
        ]
    }

    fn entry_stage(&self) -> String {
        PLAN.into()
    }

    fn assert(
        &mut self,
        _stage: &str,
        _ctx: &Value,
        _cap_hit: bool,
        completion: Option<Value>,
    ) -> Result<AssertOutcome, Error> {
        // A stage that ended without its completion tool runs again.
        Ok(match completion {
            Some(_) => AssertOutcome::Ok,
            None => AssertOutcome::Retry,
        })
    }

    fn next(&mut self, stage: &str, _ctx: &Value) -> Result<NextResult, Error> {
        let next_stages = match stage {
            PLAN => vec![BUILD.to_string()],
            _ => vec![],
        };
        Ok(NextResult {
            next_stages,
            execution: Execution::Sequential,
            join: None,
        })
    }
}

stud_sdk::export_state_machine!(PlanThenBuild);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_leads_to_build_and_build_ends_it() {
        let mut sm = PlanThenBuild;
        assert_eq!(sm.entry_stage(), PLAN);
        let next = sm.next(PLAN, &json!({})).expect("next");
        assert_eq!(next.next_stages, vec![BUILD.to_string()]);
        assert!(
            sm.next(BUILD, &json!({}))
                .expect("next")
                .next_stages
                .is_empty()
        );
    }
}
