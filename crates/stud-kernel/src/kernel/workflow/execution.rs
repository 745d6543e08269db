//! One stage, through its phases, as often as Assert asks for a retry
//! (each attempt a new execution: new id, fresh transcript, no grants
//! carried over).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::WorkflowError;
use super::definition::{StageDef, Workflow};
use super::grants::Grants;
use super::template;
use crate::kernel::act::{self, ActEnd, ActSpec, Bound, Lane, StageAuthority, StageLane};
use crate::kernel::session::Session;
use crate::kernel::turn_status::TurnStatus;
use crate::kernel::usage::{add_usage, zero_usage};
use crate::runtime::domain::{AssertOutcome, Gate};
use crate::runtime::domain::{ContentPart, Message, Role, Usage};
use stud_protocol::events::{KernelEvent, PhaseAt, StageOutcome};
use stud_protocol::replay_trace::TraceEntry;

/// Context keys only the kernel writes.
const RESERVED: [&str; 3] = ["input", "results", "siblings"];

static EXECUTIONS: AtomicU64 = AtomicU64::new(0);

/// A stage that ended well (Assert `ok` or `skip`).
#[derive(Debug, Clone)]
pub struct Executed {
    pub stage: String,
    /// The completion tool's arguments (`null` when skipped or when the
    /// model stopped without calling it).
    pub result: Value,
    pub text: String,
}

/// What a stage execution spent, whatever its ending.
#[derive(Default)]
pub struct Spent {
    pub iterations: u32,
    pub usage: Option<Usage>,
}

impl Spent {
    fn add(&mut self, iterations: u32, usage: &Usage) {
        self.iterations += iterations;
        add_usage(self.usage.get_or_insert_with(zero_usage), usage);
    }
}

/// Where an execution runs: its workflow and, in a parallel group, the
/// compound turn.
pub struct Scope<'a> {
    pub session: &'a Session,
    pub workflow: &'a Workflow,
    pub grants: &'a Arc<Grants>,
    pub compound_turn_id: Option<&'a str>,
}

/// Run `stage` until Assert says ok or skip, or its attempts run out.
pub async fn execute(
    scope: &Scope<'_>,
    stage: &str,
    ctx: &Value,
    cancel: &CancellationToken,
    spent: &mut Spent,
) -> Result<Executed, WorkflowError> {
    let def = scope.workflow.stage(stage)?;
    let mut attempt = 1;
    loop {
        let (outcome, executed) = scope.once(def, attempt, ctx, cancel, spent).await?;
        match outcome {
            AssertOutcome::Ok | AssertOutcome::Skip => return Ok(executed),
            AssertOutcome::Fail => {
                return Err(WorkflowError::StageFailed {
                    stage: stage.to_string(),
                    reason: format!("the state machine's Assert said fail (attempt {attempt})"),
                });
            }
            AssertOutcome::Retry if attempt >= def.max_attempts => {
                return Err(WorkflowError::StageFailed {
                    stage: stage.to_string(),
                    reason: format!(
                        "Assert asked for a retry after each of its {attempt} attempt(s) (retryPolicy.maxAttempts)"
                    ),
                });
            }
            AssertOutcome::Retry => {
                attempt += 1;
                tokio::select! {
                    _ = tokio::time::sleep(def.backoff) => {}
                    _ = cancel.cancelled() => return Err(cancelled(stage)),
                }
            }
        }
    }
}

fn cancelled(stage: &str) -> WorkflowError {
    WorkflowError::StageFailed {
        stage: stage.to_string(),
        reason: "cancelled".into(),
    }
}

impl Scope<'_> {
    fn sm_failed(&self, phase: &'static str, e: impl std::fmt::Display) -> WorkflowError {
        WorkflowError::Lifecycle {
            sm: self.workflow.sm.id().to_string(),
            phase,
            detail: e.to_string(),
        }
    }

    fn phase(&self, name: &str, phase: &str, def: &StageDef, execution_id: &str, attempt: u32) {
        let at = PhaseAt {
            phase: name.to_string(),
            stage_id: def.id.clone(),
            execution_id: execution_id.to_string(),
            attempt: attempt.into(),
            session_id: self.session.id.clone(),
            compound_turn_id: self.compound_turn_id.map(str::to_string),
        };
        if name == "setup" && phase == "pre" {
            // The path the workflow takes, for a replay to compare.
            self.session.bus.trace().push(TraceEntry::StageStarted {
                stage_id: def.id.clone(),
                attempt: attempt.into(),
            });
        }
        self.session.bus.publish(if phase == "pre" {
            KernelEvent::WorkflowPhasePre { at }
        } else {
            KernelEvent::WorkflowPhasePost { at }
        });
    }

    /// One execution: Setup, Init, CheckGate, Act, Assert, Exit.
    async fn once(
        &self,
        def: &StageDef,
        attempt: u32,
        ctx: &Value,
        cancel: &CancellationToken,
        spent: &mut Spent,
    ) -> Result<(AssertOutcome, Executed), WorkflowError> {
        let sm = &self.workflow.sm;
        let n = EXECUTIONS.fetch_add(1, Ordering::Relaxed) + 1;
        let execution_id = format!("{}-{}-{n}", self.session.id, def.id);
        let x = execution_id.as_str();
        self.phase("setup", "pre", def, x, attempt);
        let set = sm
            .sm_setup(&def.id, &ctx.to_string())
            .await
            .map_err(|e| self.sm_failed("setup", e))?;
        let ctx = self.checked_setup(def, ctx, &set)?;
        self.phase("setup", "post", def, x, attempt);
        self.phase("init", "pre", def, x, attempt);
        let system = template::render(&def.body, &ctx);
        self.phase("init", "post", def, x, attempt);
        self.phase("check-gate", "pre", def, x, attempt);
        let gate = sm
            .sm_check_gate(&def.id, &ctx.to_string())
            .await
            .map_err(|e| self.sm_failed("check-gate", e))?;
        self.phase("check-gate", "post", def, x, attempt);
        let (outcome, result, text) = match gate {
            Gate::Proceed => {
                self.phase("act", "pre", def, x, attempt);
                let acted = self.act(def, x, attempt, system, &ctx, cancel, spent).await;
                self.phase("act", "post", def, x, attempt);
                let (cap_hit, completion, text) = match acted {
                    Ok(ActEnd::CapHit) => (true, None, String::new()),
                    Ok(ActEnd::Answered(text)) => (false, None, text),
                    Ok(ActEnd::Completed { arguments, text }) => (false, Some(arguments), text),
                    Err(TurnStatus::Cancelled) => {
                        self.grants.expire(x);
                        return Err(cancelled(&def.id));
                    }
                    Err(status) => {
                        self.grants.expire(x);
                        return Err(WorkflowError::StageFailed {
                            stage: def.id.clone(),
                            reason: match status {
                                TurnStatus::Failed { code, message } => {
                                    format!("[{code}] {message}")
                                }
                                other => other.as_str().to_string(),
                            },
                        });
                    }
                };
                self.phase("assert", "pre", def, x, attempt);
                let completion_text = completion.as_ref().map(Value::to_string);
                let outcome = sm
                    .sm_assert(
                        &def.id,
                        &ctx.to_string(),
                        cap_hit,
                        completion_text.as_deref(),
                    )
                    .await
                    .map_err(|e| self.sm_failed("assert", e))?;
                self.phase("assert", "post", def, x, attempt);
                (outcome, completion.unwrap_or(Value::Null), text)
            }
            // A gate that does not proceed is the stage's Assert outcome.
            Gate::Retry => (AssertOutcome::Retry, Value::Null, String::new()),
            Gate::Skip => (AssertOutcome::Skip, Value::Null, String::new()),
        };
        self.phase("exit", "pre", def, x, attempt);
        self.grants.expire(x);
        self.session.bus.record(KernelEvent::WorkflowStageEnded {
            stage_id: def.id.clone(),
            execution_id: x.to_string(),
            attempt: attempt.into(),
            outcome: outcome_word(outcome),
            result: result.clone(),
            compound_turn_id: self.compound_turn_id.map(str::to_string),
        });
        self.phase("exit", "post", def, x, attempt);
        let executed = Executed {
            stage: def.id.clone(),
            result,
            text,
        };
        Ok((outcome, executed))
    }

    /// Setup's ctx, refused when it is not an object or changed a key
    /// the kernel owns.
    fn checked_setup(
        &self,
        def: &StageDef,
        before: &Value,
        set: &str,
    ) -> Result<Value, WorkflowError> {
        let after: Value = serde_json::from_str(set).map_err(|e| {
            self.sm_failed("setup", format!("it returned a ctx that is not JSON: {e}"))
        })?;
        if !after.is_object() {
            return Err(self.sm_failed("setup", "it returned a ctx that is not a JSON object"));
        }
        for key in RESERVED {
            if before.get(key) != after.get(key) {
                return Err(WorkflowError::ContextMutationForbidden {
                    sm: self.workflow.sm.id().to_string(),
                    stage: def.id.clone(),
                    key: key.to_string(),
                });
            }
        }
        Ok(after)
    }

    #[allow(clippy::too_many_arguments)]
    async fn act(
        &self,
        def: &StageDef,
        execution_id: &str,
        attempt: u32,
        system: String,
        ctx: &Value,
        cancel: &CancellationToken,
        spent: &mut Spent,
    ) -> Result<ActEnd, TurnStatus> {
        let task = ctx["input"].as_str().unwrap_or("Begin.").to_string();
        let mut lane = StageLane {
            session: self.session,
            execution_id: execution_id.to_string(),
            transcript: Vec::new(),
        };
        lane.append(Message {
            role: Role::User,
            content: vec![ContentPart::Text(task)],
        })
        .await;
        let spec = ActSpec {
            system: Some(system),
            completion: Some(def.completion.clone()),
            bound: Bound::TurnCap(def.turn_cap),
            stage: Some(StageAuthority {
                sm: self.workflow.sm.clone(),
                stage_id: def.id.clone(),
                execution_id: execution_id.to_string(),
                attempt,
                allowed: def.allowed.clone(),
                grants: self.grants.clone(),
            }),
        };
        let (mut iterations, mut usage) = (0, zero_usage());
        let out = act::run(&mut lane, &spec, cancel, &mut iterations, &mut usage).await;
        spent.add(iterations, &usage);
        out
    }
}

pub fn outcome_word(o: AssertOutcome) -> StageOutcome {
    match o {
        AssertOutcome::Ok => StageOutcome::Ok,
        AssertOutcome::Retry => StageOutcome::Retry,
        AssertOutcome::Skip => StageOutcome::Skip,
        AssertOutcome::Fail => StageOutcome::Fail,
    }
}
