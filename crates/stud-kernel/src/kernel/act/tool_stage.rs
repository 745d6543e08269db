//! TOOL_CALL: decide every call in order (approvals one at a time), run the
//! approved ones concurrently, append the results in call order. In a
//! stage, a valid call of the completion tool ends the Act.

use crate::kernel::act::ActParts;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::admit::Admit;
use super::run_tool::Ran;
use super::tool_result::error_result;
use super::{ActSpec, Completion, Lane};
use crate::kernel::payloads::call_json;
use crate::kernel::tool_outcome::Delegated;
use crate::kernel::tools::ToolRunner;
use crate::kernel::turn_status::TurnStatus;
use crate::manifest::{Phase, Stage};
use crate::runtime::domain::{ContentPart, Message, ResultPart, Role, ToolCall, ToolResult};
use stud_protocol::events::KernelEvent;

/// Run the calls of one response. `Some` is the completion tool's valid
/// arguments: the stage is done.
pub(crate) async fn tool_call_stage<L: Lane>(
    lane: &mut L,
    spec: &ActSpec,
    calls: Vec<ToolCall>,
    cancel: &CancellationToken,
) -> Result<Option<Value>, TurnStatus> {
    lane.boundary("tool-call").await;
    let s = lane.parts();
    s.bus.publish(KernelEvent::StagePre {
        stage: Stage::ToolCall,
        calls: Some(calls.len() as u64),
    });
    let (results, completed) = match s.decide_and_run(spec, &calls, cancel).await {
        Ok(done) => done,
        Err(stop) => {
            s.bus.publish(KernelEvent::StagePost {
                stage: Stage::ToolCall,
                halted: true,
            });
            return Err(stop);
        }
    };
    // The next request carries the results: stored while it is sent.
    lane.append_ahead(Message {
        role: Role::Tool,
        content: results.into_iter().map(ContentPart::ToolResult).collect(),
    })
    .await;
    lane.parts().stage_event(Stage::ToolCall, Phase::Post);
    if cancel.is_cancelled() {
        return Err(TurnStatus::Cancelled);
    }
    Ok(completed)
}

type Runnable = (usize, ToolRunner, ToolCall);

impl ActParts<'_> {
    async fn decide_and_run(
        &self,
        spec: &ActSpec,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Result<(Vec<ToolResult>, Option<Value>), TurnStatus> {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for call in calls {
            let args = call_json(call)["arguments"].take();
            self.bus.publish(KernelEvent::ToolProposed {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: args.clone(),
            });
        }
        let completed = match &spec.completion {
            Some(c) => self.completion_calls(c, calls, &mut results),
            None => None,
        };
        let mut runnable: Vec<Runnable> = Vec::new();
        let mut may_write = false;
        for (i, call) in calls.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            if completed.is_some() {
                results[i] = Some(self.refuse(
                    call,
                    "stage-completed",
                    "not run: the stage's completion tool was called in the same response",
                ));
                continue;
            }
            match self.admit(call, spec.stage.as_ref()).await {
                Admit::Run(entry, call) => {
                    // `task` is read-only to the authority stack (each of
                    // the child's calls is judged on its own), but the
                    // child may write: its changes belong to this turn.
                    may_write |= !entry.spec.read_only || matches!(entry.runner, ToolRunner::Task);
                    runnable.push((i, entry.runner.clone(), call))
                }
                Admit::Refuse(result) => results[i] = Some(result),
                Admit::Halt(key) => {
                    return Err(TurnStatus::Halted {
                        tool: call.name.clone(),
                        key,
                    });
                }
            }
        }
        // A child started now gets no tool the stage or the turn's
        // narrowing (a command's allowed-tools, plan mode) leaves out.
        let stage = spec.stage.as_ref().and_then(|s| s.allowed.as_ref());
        let envelope = match (stage, &self.turn.tools) {
            (Some(a), Some(l)) => Some(a.intersection(&l.allowed).cloned().collect()),
            (Some(a), None) => Some(a.clone()),
            (None, Some(l)) => Some(l.allowed.clone()),
            (None, None) => None,
        };
        if may_write {
            self.checkpoint().await;
        }
        let (ran, halted) = self.run_calls(runnable, envelope.as_ref(), cancel).await;
        for (i, result) in ran {
            results[i] = Some(result);
        }
        if let Some(halt) = halted {
            return Err(halt);
        }
        let results = results
            .into_iter()
            .zip(calls)
            .map(|(r, c)| {
                r.unwrap_or_else(|| {
                    error_result(c, "tool-execution-failed", "the call produced no result")
                })
            })
            .collect();
        Ok((results, completed))
    }

    /// Judge the completion tool's calls: the first valid one completes
    /// the stage; invalid ones go back to the model as typed errors.
    fn completion_calls(
        &self,
        c: &Completion,
        calls: &[ToolCall],
        results: &mut [Option<ToolResult>],
    ) -> Option<Value> {
        let mut completed = None;
        for (i, call) in calls.iter().enumerate() {
            if call.name != c.name || completed.is_some() {
                continue;
            }
            let problems = match serde_json::from_str::<Value>(&call.arguments) {
                Err(e) => vec![format!("the arguments are not JSON: {e}")],
                Ok(args) => {
                    let problems: Vec<String> = c
                        .validator
                        .iter_errors(&args)
                        .map(|e| format!("at `{}`: {e}", e.instance_path()))
                        .collect();
                    if problems.is_empty() {
                        self.bus.record(KernelEvent::StageCompletion {
                            call_id: call.id.clone(),
                            tool: call.name.clone(),
                            arguments: args.clone(),
                        });
                        results[i] = Some(ToolResult {
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            content: vec![ResultPart::Text("stage complete".into())],
                            is_error: false,
                        });
                        completed = Some(args);
                        continue;
                    }
                    problems
                }
            };
            results[i] = Some(self.refuse(
                call,
                "completion-invalid",
                &format!(
                    "the arguments of `{}` do not match its schema; call it again with arguments that do:\n{}",
                    c.name,
                    problems.join("\n")
                ),
            ));
        }
        completed
    }

    /// Run approved calls concurrently (at most `tool_parallelism` at
    /// once), each under a cancellation token of its own below the Act's.
    /// A `task` call runs a child session; a child that needed a person in
    /// a headless run halts the batch (the other calls are cancelled) and
    /// the turn.
    async fn run_calls(
        &self,
        runnable: Vec<Runnable>,
        envelope: Option<&BTreeSet<String>>,
        cancel: &CancellationToken,
    ) -> (Vec<(usize, ToolResult)>, Option<TurnStatus>) {
        let permits = Arc::new(Semaphore::new(self.config.tool_parallelism.max(1)));
        let batch = cancel.child_token();
        let halted: std::sync::Mutex<Option<TurnStatus>> = std::sync::Mutex::new(None);
        let runs = runnable.into_iter().map(|(i, runner, call)| {
            let permits = permits.clone();
            let token = batch.child_token();
            let (batch, halted) = (&batch, &halted);
            async move {
                let _permit = permits.acquire_owned().await;
                let started = Instant::now();
                self.bus.record(KernelEvent::ToolStarted {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                });
                let ran = match self.run_admitted(&runner, &call, envelope, &token).await {
                    Delegated::Ran(ran) => ran,
                    Delegated::Halted(halt) => {
                        halted
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(halt);
                        batch.cancel();
                        Ran::Cancelled
                    }
                };
                (i, self.tool_result(&call, ran, started).await)
            }
        });
        let results = futures::future::join_all(runs).await;
        (
            results,
            halted.into_inner().unwrap_or_else(|p| p.into_inner()),
        )
    }
}
