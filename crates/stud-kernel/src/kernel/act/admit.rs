//! Everything before a tool call runs: lookup, argument checks,
//! `tool-call.pre` transforms, the authority stack (stage, then mode), then
//! guard hooks. The arguments approved and guarded are the ones that run.

use crate::kernel::act::ActParts;
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::stage_gate::{StageAuthority, StageDecision};
use super::tool_result::error_result;
use crate::kernel::authority::{Callee, Decision, Proposal};
use crate::kernel::hooks::TransformFailed;
use crate::kernel::payloads::call_view;
use crate::kernel::tool_outcome::Delegated;
use crate::kernel::tools::{ToolEntry, ToolRunner};
use crate::kernel::turn_status::TurnStatus;
use crate::manifest::{HookSlot, Phase, Stage};
use crate::runtime::CallError;
use crate::runtime::domain::{ToolCall, ToolResult};
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{SlotPayload, ToolCallPre};

/// What admission decided for one call.
pub(crate) enum Admit<'a> {
    Run(&'a ToolEntry, ToolCall),
    Refuse(ToolResult),
    /// Headless and a person was needed; the approval key.
    Halt(String),
}

impl crate::kernel::session::Session {
    /// One tool call through the same path a turn uses, without touching
    /// the history (see [`ActParts::call`]). For commands and benchmarks:
    /// a refusal is the error result the model would see.
    pub async fn call_tool(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, TurnStatus> {
        match self.act_parts().call(call, cancel).await {
            Called::Refused(result) | Called::Ran(result) => Ok(result),
            Called::Halted(status) => Err(status),
        }
    }

    /// [`ActParts::call`] for a call the person made (`@path`,
    /// `!command`), with an id no other call has.
    pub(crate) async fn call_for_person(
        &self,
        kind: &str,
        tool: &str,
        arguments: String,
        cancel: &CancellationToken,
    ) -> Called {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = ToolCall {
            id: format!("{kind}-{}-{n}", self.id),
            name: tool.into(),
            arguments,
        };
        self.act_parts().call(&call, cancel).await
    }
}

/// What a call outside a turn came to.
pub(crate) enum Called {
    /// The authority stack (or a guard) refused it; the result says why.
    Refused(ToolResult),
    /// It needed a decision nobody could make (a headless run).
    Halted(TurnStatus),
    /// It ran (its result may be an error of the tool's own).
    Ran(ToolResult),
}

impl ActParts<'_> {
    /// One tool call through the same path a turn uses (lookup, schema,
    /// authority stack, `tool-call.pre`, run, `tool-call.post`), without
    /// touching the history.
    pub(crate) async fn call(&self, call: &ToolCall, cancel: &CancellationToken) -> Called {
        match self.admit(call, None).await {
            Admit::Refuse(result) => Called::Refused(result),
            Admit::Halt(key) => Called::Halted(TurnStatus::Halted {
                tool: call.name.clone(),
                key,
            }),
            Admit::Run(entry, call) => {
                let started = Instant::now();
                match self.run_admitted(&entry.runner, &call, None, cancel).await {
                    Delegated::Ran(ran) => Called::Ran(self.tool_result(&call, ran, started).await),
                    Delegated::Halted(halt) => Called::Halted(halt),
                }
            }
        }
    }

    /// Everything before running a call: lookup, argument checks, the
    /// authority stack and the `tool-call.pre` slot.
    pub(crate) async fn admit<'a>(
        &'a self,
        call: &ToolCall,
        stage: Option<&StageAuthority>,
    ) -> Admit<'a> {
        let Some(entry) = self.roster.tools.get(&call.name) else {
            if call.name == crate::kernel::agent_catalog::TASK_TOOL && self.lineage.parent.is_some()
            {
                let msg = format!(
                    "`task` is not available to agent `{}`: it is at the depth limit of {} sessions (settings `agents.maxDepth`) or its definition does not list `task`; do the work yourself",
                    self.lineage.path, self.agents.max_depth
                );
                return Admit::Refuse(self.refuse(call, "not-found", &msg));
            }
            let msg = format!(
                "unknown tool `{}`; available tools: {}",
                call.name,
                self.roster.tools.names().join(", ")
            );
            return Admit::Refuse(self.refuse(call, "not-found", &msg));
        };
        if let Some(limit) = &self.turn.tools
            && !limit.allows(&call.name)
        {
            let mut allowed: Vec<&str> = limit.allowed.iter().map(String::as_str).collect();
            if allowed.is_empty() {
                allowed.push("none");
            }
            let msg = format!(
                "`{}` is not among the tools this turn may use ({}: {}); do the task with those",
                call.name,
                limit.by,
                allowed.join(", ")
            );
            return Admit::Refuse(self.refuse(call, "not-allowed", &msg));
        }
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(v) => v,
            Err(e) => {
                return Admit::Refuse(self.refuse(
                    call,
                    "input-invalid",
                    &format!("arguments are not valid JSON: {e}"),
                ));
            }
        };
        if let Some(problems) = entry.violations(&args) {
            return Admit::Refuse(self.refuse(
                call,
                "input-invalid",
                &format!(
                    "arguments do not match the schema of `{}`:\n{problems}",
                    call.name
                ),
            ));
        }
        // `tool-call.pre` transforms run before anything is decided, so the
        // arguments approved and guarded are exactly the ones that run.
        let slot = HookSlot {
            stage: Stage::ToolCall,
            phase: Phase::Pre,
        };
        let hooked = self.roster.hooks.is_hooked(slot);
        let call = if hooked {
            let transformed = match self
                .roster
                .hooks
                .transform(
                    slot,
                    ToolCallPre {
                        call: call_view(call),
                    }
                    .into_value(),
                )
                .await
            {
                Ok(t) => t,
                // Fail closed: what the transform would have changed in the
                // arguments cannot be known, so the call does not run.
                Err(failed) => {
                    return Admit::Refuse(self.refuse(
                        call,
                        TransformFailed::CODE,
                        &format!("this call was not run: {failed}"),
                    ));
                }
            };
            let rewritten = match transformed.changed() {
                None => None,
                Some(p) => match p.pointer("/call/arguments") {
                    Some(a) => Some(a.clone()),
                    // Changed into something without arguments: what was
                    // meant cannot be known, so the call does not run.
                    None => {
                        return Admit::Refuse(self.refuse(
                            call,
                            TransformFailed::CODE,
                            "this call was not run: a `tool-call.pre` transform changed it into something without `call.arguments`",
                        ));
                    }
                },
            };
            match rewritten {
                Some(rewritten) if rewritten != args => {
                    if let Some(problems) = entry.violations(&rewritten) {
                        return Admit::Refuse(self.refuse(
                            call,
                            "input-invalid",
                            &format!(
                                "arguments rewritten by a hook do not match the schema:\n{problems}"
                            ),
                        ));
                    }
                    ToolCall {
                        arguments: rewritten.to_string(),
                        ..call.clone()
                    }
                }
                _ => call.clone(),
            }
        } else {
            call.clone()
        };
        let key = match &entry.runner {
            ToolRunner::Mcp(tool) => tool.approval_key(&call.arguments),
            ToolRunner::Task => task_key(&call.arguments),
            ToolRunner::Skill => crate::kernel::skills::skill_key(&call.arguments),
            ToolRunner::Component(ext) => match ext.tool_approval_key(&call.arguments).await {
                Ok(k) => k,
                // The tool refused the arguments (a path outside the
                // project): the model gets the tool's own words.
                Err(CallError::Guest { error, .. }) => {
                    return Admit::Refuse(self.refuse(&call, &error.code, &error.message));
                }
                Err(e) => {
                    return Admit::Refuse(self.refuse(
                        &call,
                        "approval-key-failed",
                        &e.to_string(),
                    ));
                }
            },
        };
        // Lines are meaningful (each must be approved); other control
        // characters could hide part of the key from the person asked.
        if key.chars().any(|c| c.is_control() && c != '\n') {
            return Admit::Refuse(self.refuse(
                &call,
                "approval-key-invalid",
                "the tool derived an approval key with a control character",
            ));
        }
        let callee = match &entry.runner {
            ToolRunner::Mcp(tool) => Callee::Mcp {
                server: &tool.server,
                tool: &tool.name,
            },
            ToolRunner::Component(_) | ToolRunner::Task | ToolRunner::Skill => {
                Callee::Tool(&call.name)
            }
        };
        let proposal = Proposal {
            call_id: &call.id,
            tool: &call.name,
            callee,
            project_tool: entry.runner.from_project(),
            key: &key,
            read_only: entry.spec.read_only,
            description: format!("{}({})", call.name, call.arguments),
        };
        // Each layer of the stack leaves its decision on the record, in
        // order: state machine, mode, then every guard.
        if let Some(stage) = stage {
            let final_args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            if let StageDecision::Deny { code, reason } =
                self.stage_decide(stage, &proposal, &final_args).await
            {
                return Admit::Refuse(self.refuse(&call, code, &reason));
            }
            self.authority
                .audit_mode_skipped(&proposal, &stage.stage_id);
        } else {
            self.authority.audit_no_state_machine(&proposal);
            if matches!(entry.runner, ToolRunner::Task) {
                self.authority.approve_delegation(&proposal);
            } else {
                match self.authority.decide(&proposal, self.interactions).await {
                    Decision::Approve => {}
                    Decision::Deny(reason) => {
                        return Admit::Refuse(self.refuse(&call, "approval-denied", &reason));
                    }
                    Decision::Halt => return Admit::Halt(key),
                }
            }
        }
        if !hooked {
            return Admit::Run(entry, call);
        }
        let payload = ToolCallPre {
            call: call_view(&call),
        }
        .into_value();
        let verdicts = self.roster.hooks.guard(slot, &payload).await;
        self.roster.hooks.observe_slot(slot, &payload);
        for by in &verdicts.allowed {
            self.authority.audit_guard(&proposal, by.as_str(), None);
        }
        match verdicts.denied {
            Some((by, error)) => {
                self.authority
                    .audit_guard(&proposal, by.as_str(), Some(&error.message));
                Admit::Refuse(self.refuse(
                    &call,
                    "approval-denied",
                    &format!("denied by guard `{by}`: {}", error.message),
                ))
            }
            None => Admit::Run(entry, call),
        }
    }

    pub(crate) fn refuse(&self, call: &ToolCall, code: &str, message: &str) -> ToolResult {
        self.bus.record(KernelEvent::ToolFailed {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            class: "ToolTerminal".into(),
            code: code.into(),
            message: message.into(),
            duration_ms: None,
        });
        error_result(call, code, message)
    }
}

/// A `task` call's approval key: the agent it starts.
fn task_key(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| v["agent"].as_str().map(str::to_string))
        .unwrap_or_default()
}
