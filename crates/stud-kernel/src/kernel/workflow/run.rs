//! The workflow driver: from the position, run stages (sequential ones one
//! turn each, a parallel group and its join one compound turn), ask Next,
//! persist the position at every stage boundary.

use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::execution::{Executed, Scope, Spent, execute};
use super::position::{Next, Position};
use super::{Attached, WorkflowError};
use crate::kernel::session::Session;
use crate::kernel::turn_status::{TurnOutcome, TurnStages, TurnStatus};
use crate::kernel::usage::zero_usage;
use crate::runtime::domain::{Execution, NextResult};
use stud_protocol::events::KernelEvent;

impl Session {
    /// Run the attached workflow from where it stands (the entry stage with
    /// `input` as the task, or the stage a resumed session stopped at)
    /// until it terminates, fails or is cancelled.
    pub async fn run_workflow(&mut self, input: &str, cancel: &CancellationToken) -> TurnOutcome {
        self.trace_input(input);
        // Cheap handles: the session keeps its own, so the manifest names
        // the state machine while the workflow runs.
        let outcome = match self.workflow.clone() {
            None => self.run_turn(input, cancel).await,
            // Every stage's turn already saved the manifest.
            Some(attached) => self.drive(&attached, input, cancel).await,
        };
        self.flush_trace().await;
        outcome
    }

    async fn drive(
        &mut self,
        attached: &Attached,
        input: &str,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let wf = &attached.workflow;
        let mut pos = match self.workflow_position.clone() {
            Some(p) if !p.is_done() => p,
            _ => Position::start(
                wf.sm.id().as_str(),
                &wf.sm.digest.to_string(),
                &wf.entry,
                input,
            ),
        };
        self.bus.record(KernelEvent::WorkflowStarted {
            state_machine: pos.state_machine.clone(),
            next: json!(pos.next),
            resumed: self
                .workflow_position
                .as_ref()
                .is_some_and(|p| !p.is_done()),
        });
        self.save_position(&pos).await;
        let mut last = None;
        loop {
            let step = match pos.next.clone() {
                Next::Done => break,
                Next::Sequential { stages } => {
                    self.sequential(attached, &stages, &mut pos, cancel).await
                }
                Next::Parallel { stages, join } => {
                    self.parallel(attached, &stages, join.as_deref(), &mut pos, cancel)
                        .await
                }
            };
            match step {
                Ok(outcome) => last = Some(outcome),
                Err(outcome) => {
                    self.bus.record(KernelEvent::WorkflowFinished {
                        status: outcome.status.result(),
                        next: Some(json!(pos.next)),
                        results: None,
                    });
                    return outcome;
                }
            }
            self.save_position(&pos).await;
        }
        self.bus.record(KernelEvent::WorkflowFinished {
            status: stud_protocol::words::TurnResult::Ok,
            next: None,
            results: Some(pos.ctx["results"].clone()),
        });
        self.workflow_position = Some(pos);
        last.unwrap_or_else(|| TurnOutcome {
            turn_id: String::new(),
            status: TurnStatus::Completed,
            text: String::new(),
            iterations: 0,
            usage: zero_usage(),
        })
    }

    /// Record the position in the log (the state machine's slot).
    async fn save_position(&mut self, pos: &Position) {
        self.workflow_position = Some(pos.clone());
        self.append_record(pos.record()).await;
    }

    /// Stages one after another, one turn each; then Next.
    async fn sequential(
        &mut self,
        attached: &Attached,
        stages: &[String],
        pos: &mut Position,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, TurnOutcome> {
        let mut outcome = None;
        let mut last_stage = String::new();
        for (i, stage) in stages.iter().enumerate() {
            let turn = self
                .open_turn(
                    &format!("stage {stage}"),
                    TurnStages::One(stage.to_string()),
                )
                .await;
            let mut spent = Spent::default();
            let scope = Scope {
                session: self,
                workflow: &attached.workflow,
                grants: &attached.grants,
                compound_turn_id: None,
            };
            let done = execute(&scope, stage, &pos.ctx, cancel, &mut spent).await;
            let status = match &done {
                Ok(_) => TurnStatus::Completed,
                Err(e) => failed(e, cancel),
            };
            let text = done.as_ref().map(shown).unwrap_or_default();
            let o = self.close_spent(turn, status, text, spent).await;
            let executed = done.map_err(|_| o.clone())?;
            Position::set_result(&mut pos.ctx, stage, executed.result.clone());
            // The stages still to run, should the session stop here.
            pos.next = Next::Sequential {
                stages: stages[i + 1..].to_vec(),
            };
            if i + 1 < stages.len() {
                self.save_position(pos).await;
            }
            last_stage = executed.stage;
            outcome = Some(o);
        }
        let outcome = outcome.ok_or_else(|| {
            self.refused(&WorkflowError::StageNotRegistered {
                sm: attached.workflow.sm.id().to_string(),
                stage: String::new(),
            })
        })?;
        self.next(attached, &last_stage, pos).await?;
        Ok(outcome)
    }

    /// Siblings at once on frozen copies of ctx, fail-fast; then the join
    /// with every sibling's result; one compound turn for the group.
    async fn parallel(
        &mut self,
        attached: &Attached,
        stages: &[String],
        join: Option<&str>,
        pos: &mut Position,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, TurnOutcome> {
        let turn = self
            .open_turn(
                &format!("stages {} in parallel", stages.join(", ")),
                TurnStages::Parallel {
                    stages: stages.to_vec(),
                    join: join.map(str::to_string),
                },
            )
            .await;
        let group = cancel.child_token();
        let mut spent = Spent::default();
        let scope = Scope {
            session: self,
            workflow: &attached.workflow,
            grants: &attached.grants,
            compound_turn_id: Some(&turn),
        };
        let done = run_group(&scope, stages, join, &pos.ctx, &group, &turn, &mut spent).await;
        let status = match &done {
            Ok(_) => TurnStatus::Completed,
            Err(e) => failed(e, cancel),
        };
        let text = done
            .as_ref()
            .map(|(_, last)| shown(last))
            .unwrap_or_default();
        let outcome = self.close_spent(turn, status, text, spent).await;
        let (siblings, last) = done.map_err(|_| outcome.clone())?;
        for (stage, result) in siblings {
            Position::set_result(&mut pos.ctx, &stage, result);
        }
        Position::set_result(&mut pos.ctx, &last.stage, last.result.clone());
        self.next(attached, &last.stage, pos).await?;
        Ok(outcome)
    }

    /// Next: ask the state machine what follows `stage`, and check it.
    async fn next(
        &mut self,
        attached: &Attached,
        stage: &str,
        pos: &mut Position,
    ) -> Result<(), TurnOutcome> {
        let wf = &attached.workflow;
        let asked = wf
            .sm
            .sm_next(stage, &pos.ctx.to_string())
            .await
            .map_err(|e| WorkflowError::Lifecycle {
                sm: wf.sm.id().to_string(),
                phase: "next",
                detail: e.to_string(),
            });
        let next = asked.and_then(|n| plan(attached, stage, n));
        match next {
            Ok(next) => {
                pos.next = next;
                Ok(())
            }
            Err(e) => Err(self.refused(&e)),
        }
    }

    /// A workflow error outside any turn, as the run's outcome.
    fn refused(&self, e: &WorkflowError) -> TurnOutcome {
        self.bus.record(KernelEvent::WorkflowFailed {
            code: e.code().into(),
            message: e.to_string(),
        });
        TurnOutcome {
            turn_id: String::new(),
            status: TurnStatus::Failed {
                code: e.code().into(),
                message: e.to_string(),
            },
            text: String::new(),
            iterations: 0,
            usage: zero_usage(),
        }
    }

    async fn close_spent(
        &mut self,
        turn: String,
        status: TurnStatus,
        text: String,
        spent: Spent,
    ) -> TurnOutcome {
        let usage = spent.usage.unwrap_or_else(zero_usage);
        self.close_turn(turn, status, text, spent.iterations, usage)
            .await
    }
}

/// The siblings (fail-fast), then the join. Returns each sibling's result
/// and the stage that ended the group (the join, or the last sibling).
async fn run_group(
    scope: &Scope<'_>,
    stages: &[String],
    join: Option<&str>,
    ctx: &Value,
    group: &CancellationToken,
    turn: &str,
    spent: &mut Spent,
) -> Result<(Vec<(String, Value)>, Executed), WorkflowError> {
    let frozen = Arc::new(ctx.clone());
    let mut running: FuturesUnordered<_> = stages
        .iter()
        .map(|stage| {
            let frozen = frozen.clone();
            async move {
                let mut spent = Spent::default();
                let r = execute(scope, stage, &frozen, group, &mut spent).await;
                (stage.clone(), r, spent)
            }
        })
        .collect();
    let mut done: Vec<Executed> = Vec::new();
    let mut failure: Option<WorkflowError> = None;
    while let Some((stage, r, s)) = running.next().await {
        spent.iterations += s.iterations;
        if let Some(u) = &s.usage {
            crate::kernel::usage::add_usage(spent.usage.get_or_insert_with(zero_usage), u);
        }
        match r {
            Ok(executed) => done.push(executed),
            Err(e) if failure.is_none() => {
                // Fail-fast: the first failure stops the others.
                group.cancel();
                scope
                    .session
                    .bus
                    .record(KernelEvent::WorkflowSiblingFailed {
                        stage_id: stage.to_string(),
                        compound_turn_id: turn.to_string(),
                        message: e.to_string(),
                        join_ready: false,
                    });
                failure = Some(WorkflowError::ParallelSiblingFailure {
                    failed: stage,
                    compound_turn_id: turn.to_string(),
                    reason: e.to_string(),
                });
            }
            Err(_) => {}
        }
    }
    if let Some(f) = failure {
        return Err(f);
    }
    // Declared order, whatever order they finished in.
    done.sort_by_key(|e| stages.iter().position(|s| *s == e.stage));
    let siblings: Vec<(String, Value)> = done
        .iter()
        .map(|e| (e.stage.clone(), e.result.clone()))
        .collect();
    let Some(join) = join else {
        let last = done
            .pop()
            .ok_or_else(|| WorkflowError::InvalidParallelPlan {
                sm: scope.workflow.sm.id().to_string(),
                after: String::new(),
                count: 0,
            })?;
        return Ok((siblings, last));
    };
    let mut join_ctx = ctx.clone();
    if let Some(m) = join_ctx.as_object_mut() {
        let map: Map<String, Value> = siblings.iter().cloned().collect();
        m.insert("siblings".into(), Value::Object(map));
    }
    let executed = execute(scope, join, &join_ctx, group, spent).await?;
    Ok((siblings, executed))
}

/// Check a NextResult against the declared stages.
fn plan(attached: &Attached, after: &str, n: NextResult) -> Result<Next, WorkflowError> {
    let wf = &attached.workflow;
    let sm = wf.sm.id().to_string();
    for s in n.next_stages.iter().chain(n.join.iter()) {
        wf.stage(s)?;
    }
    if n.next_stages.is_empty() {
        return Ok(Next::Done);
    }
    match n.execution {
        Execution::Sequential => Ok(Next::Sequential {
            stages: n.next_stages,
        }),
        Execution::Parallel if n.next_stages.len() < 2 => Err(WorkflowError::InvalidParallelPlan {
            sm,
            after: after.to_string(),
            count: n.next_stages.len(),
        }),
        Execution::Parallel => {
            if let Some(j) = &n.join
                && n.next_stages.contains(j)
            {
                return Err(WorkflowError::JoinDangling {
                    sm,
                    join: j.clone(),
                });
            }
            Ok(Next::Parallel {
                stages: n.next_stages,
                join: n.join,
            })
        }
    }
}

fn failed(e: &WorkflowError, cancel: &CancellationToken) -> TurnStatus {
    if cancel.is_cancelled() {
        return TurnStatus::Cancelled;
    }
    TurnStatus::Failed {
        code: e.code().into(),
        message: e.to_string(),
    }
}

/// What the person sees of a finished stage: its text, else its result.
fn shown(e: &Executed) -> String {
    if !e.text.is_empty() {
        return e.text.clone();
    }
    match &e.result {
        Value::Null => String::new(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}
