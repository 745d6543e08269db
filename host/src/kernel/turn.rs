//! One turn: RECEIVE_INPUT, then COMPOSE_REQUEST -> SEND_REQUEST ->
//! STREAM_RESPONSE -> TOOL_CALL repeated while the model calls tools
//! (bounded by `max_iterations`), then RENDER. Every stage is bracketed by
//! `stage.pre`/`stage.post` events and its two hook slots; a deny at a pre
//! slot skips the stage body and its post slot.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::authority::{Decision, Proposal};
use super::capabilities::{MissingCapability, check_request};
use super::hooks::SlotOutcome;
use super::payloads::{
    call_json, messages_from, messages_json, result_parts_from, result_parts_json, result_text,
};
use super::response_limits::{Part, ResponseBudget, TooLarge};
use super::retry::{CONTEXT_OVERFLOW, RetryPolicy};
use super::session::Session;
use super::tools::ToolEntry;
use super::usage::{BudgetExceeded, cost};
use crate::manifest::{HookSlot, Phase, Stage};
use crate::runtime::CallError;
use crate::runtime::bindings::stud::extension::provider_types::{
    FinishReason, Request, StreamEvent,
};
use crate::runtime::bindings::stud::extension::types::{
    ContentPart, Message, ResultPart, Role, Thinking, ToolCall, ToolResult, Usage,
};
use crate::runtime::kinds::ResponseStream;

/// How long a cancelled extension call may take to notice before it is
/// abandoned (its instance is then discarded).
const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// Longest tool output copied into an event.
const EVENT_OUTPUT_CHARS: usize = 4000;
/// Events a response may send before its first visible one (usage,
/// keep-alives); more is a broken or hostile endpoint.
const MAX_EVENTS_BEFORE_VISIBLE: usize = 4096;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStatus {
    Completed,
    /// The turn failed; `code` is machine-readable.
    Failed {
        code: String,
        message: String,
    },
    Cancelled,
    /// Headless run needed a person (approval) and nobody could answer.
    Halted {
        tool: String,
        key: String,
    },
}

impl TurnStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnStatus::Completed => "ok",
            TurnStatus::Failed { .. } => "error",
            TurnStatus::Cancelled => "cancelled",
            TurnStatus::Halted { .. } => "halted",
        }
    }
}

#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub turn_id: String,
    pub status: TurnStatus,
    /// The final assistant text (as rendered).
    pub text: String,
    pub iterations: u32,
    pub usage: Usage,
}

fn fail(code: &str, message: impl Into<String>) -> TurnStatus {
    TurnStatus::Failed {
        code: code.into(),
        message: message.into(),
    }
}

/// A response whose first visible events (or end) have arrived. A stream
/// that already ended answers `next` with its end, without a guest call.
struct Started {
    stream: ResponseStream,
    /// Everything read so far, in order.
    events: Vec<StreamEvent>,
}

struct Assembled {
    text: String,
    /// Thinking blocks in order, each with its signature (the API wants
    /// them back unchanged).
    thinking: Vec<Thinking>,
    calls: Vec<ToolCall>,
    finish: FinishReason,
}

impl Session {
    pub async fn run_turn(&mut self, input: &str, cancel: &CancellationToken) -> TurnOutcome {
        self.apply_reloads("between-turns").await;
        self.turns += 1;
        let turn_id = format!("{}-t{}", self.id, self.turns);
        self.bus.set_turn(Some(turn_id.clone()));
        self.bus
            .record("turn.start", json!({"turn_id": turn_id, "input": input}));
        let mut iterations = 0;
        let mut usage = zero_usage();
        let result = self
            .turn_body(input, cancel, &mut iterations, &mut usage)
            .await;
        let (status, text) = match result {
            Ok(text) => (TurnStatus::Completed, text),
            Err(s) => (s, String::new()),
        };
        add_usage(&mut self.usage, &usage);
        let turn_cost = self.turn_cost(&usage);
        self.cost_usd += turn_cost;
        self.warned_this_turn = false;
        let message = match &status {
            TurnStatus::Failed { message, .. } => message.clone(),
            TurnStatus::Halted { tool, key } => {
                format!("approval needed for {tool} `{key}` but this run is headless")
            }
            _ => String::new(),
        };
        let code = match &status {
            TurnStatus::Failed { code, .. } => code.clone(),
            _ => String::new(),
        };
        self.bus.record(
            "turn.end",
            json!({"turn_id": turn_id, "status": status.as_str(), "code": code, "message": message, "iterations": iterations, "usage": usage_json(&usage), "session_usage": usage_json(&self.usage), "cost_usd": turn_cost, "session_cost_usd": self.cost_usd}),
        );
        self.bus.set_turn(None);
        self.save_manifest().await;
        TurnOutcome {
            turn_id,
            status,
            text,
            iterations,
            usage,
        }
    }

    async fn turn_body(
        &mut self,
        input: &str,
        cancel: &CancellationToken,
        iterations: &mut u32,
        usage: &mut Usage,
    ) -> Result<String, TurnStatus> {
        // A spent budget stops before the input is taken: no user message
        // is left in the history without an answer.
        self.check_budget(usage)?;
        self.receive_input(input).await?;
        let final_text = loop {
            if cancel.is_cancelled() {
                return Err(TurnStatus::Cancelled);
            }
            if *iterations >= self.config.max_iterations {
                return Err(fail(
                    "loop-bound-exceeded",
                    format!(
                        "stopped after {} provider requests (runtime.continuation.maxIterations); tool calls from earlier requests may already have run",
                        self.config.max_iterations
                    ),
                ));
            }
            self.check_budget(usage)?;
            *iterations += 1;
            let mut request = self.compose_request(*iterations).await?;
            if self.fit_context(&request, false).await {
                request = self.compose_request(*iterations).await?;
            }
            let estimate = |r: &Request| {
                super::compaction::raw_estimate(
                    r.system.as_deref(),
                    &r.messages,
                    Session::tools_json_len(r),
                )
            };
            let mut raw = estimate(&request);
            let stream = match self.send_request(request, *iterations, cancel).await {
                Err(TurnStatus::Failed { code, .. })
                    if code == format!("provider-{CONTEXT_OVERFLOW}") =>
                {
                    // The provider counted more than we estimated: compact
                    // harder and try once more.
                    let request = self.compose_request(*iterations).await?;
                    self.fit_context(&request, true).await;
                    let request = self.compose_request(*iterations).await?;
                    raw = estimate(&request);
                    self.send_request(request, *iterations, cancel).await?
                }
                other => other?,
            };
            let prompt_before = prompt_tokens(usage);
            let assembled = self.stream_response(stream, cancel, usage).await?;
            self.calibrate(raw, prompt_tokens(usage) - prompt_before);
            let mut content = Vec::new();
            content.extend(
                assembled
                    .thinking
                    .iter()
                    .cloned()
                    .map(ContentPart::Thinking),
            );
            if !assembled.text.is_empty() {
                content.push(ContentPart::Text(assembled.text.clone()));
            }
            content.extend(assembled.calls.iter().cloned().map(ContentPart::ToolCall));
            self.append(Message {
                role: Role::Assistant,
                content,
            })
            .await;
            if assembled.finish == FinishReason::Length {
                // Cut off at the output limit: the text is shown as far as
                // it got, but not as a finished answer, and tool calls
                // whose arguments may be cut are not run.
                let shown = self.render(assembled.text).await?;
                let what = if assembled.calls.is_empty() {
                    "its answer".to_string()
                } else {
                    format!(
                        "its answer; its {} tool call(s) were not run",
                        assembled.calls.len()
                    )
                };
                return Err(fail(
                    "response-truncated",
                    format!(
                        "the model reached its output limit and stopped mid-way through {what} ({} characters shown); ask it to continue, or raise active.maxTokens",
                        shown.chars().count()
                    ),
                ));
            }
            if assembled.calls.is_empty() {
                break assembled.text;
            }
            self.tool_call_stage(assembled.calls, cancel).await?;
        };
        self.render(final_text).await
    }

    fn stage_event(&self, stage: Stage, phase: Phase, extra: Value) {
        let name = if phase == Phase::Pre {
            "stage.pre"
        } else {
            "stage.post"
        };
        let mut payload = json!({"stage": stage.to_string()});
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        self.bus.publish(name, payload);
    }

    /// Run a pre slot; a deny ends the turn with a clear error. `Some` is
    /// a payload a transform rewrote.
    async fn pre(
        &self,
        stage: Stage,
        payload: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, TurnStatus> {
        self.stage_event(stage, Phase::Pre, json!({}));
        match self.hooks.run(stage, Phase::Pre, payload).await {
            SlotOutcome::Continue(p) => Ok(p),
            SlotOutcome::Denied { by, error } => Err(fail(
                "hook-denied",
                format!("{stage} was denied by guard `{by}`: {}", error.message),
            )),
        }
    }

    /// Run a post slot; `Some` is a payload a transform rewrote.
    async fn post(&self, stage: Stage, payload: impl FnOnce() -> Value) -> Option<Value> {
        let out = match self.hooks.run(stage, Phase::Post, payload).await {
            SlotOutcome::Continue(p) => p,
            // Guards cannot attach to post slots (validated at load).
            SlotOutcome::Denied { .. } => None,
        };
        self.stage_event(stage, Phase::Post, json!({}));
        out
    }

    async fn receive_input(&mut self, input: &str) -> Result<(), TurnStatus> {
        self.apply_reloads("receive-input").await;
        let rewritten = self
            .pre(Stage::ReceiveInput, || json!({"input": input}))
            .await?;
        let text = rewritten
            .as_ref()
            .and_then(|p| p.get("input"))
            .and_then(Value::as_str)
            .unwrap_or(input)
            .trim()
            .to_string();
        if text.is_empty() {
            return Err(fail("input-invalid", "the input is empty; type a message"));
        }
        let rewritten = self
            .post(Stage::ReceiveInput, || json!({"input": text}))
            .await;
        let text = rewritten
            .as_ref()
            .and_then(|p| p.get("input"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or(text);
        self.append(Message {
            role: Role::User,
            content: vec![ContentPart::Text(text)],
        })
        .await;
        Ok(())
    }

    async fn compose_request(&mut self, iteration: u32) -> Result<Request, TurnStatus> {
        self.apply_reloads("compose-request").await;
        let history = &self.history;
        let rewritten = self
            .pre(
                Stage::ComposeRequest,
                || json!({"iteration": iteration, "messages": messages_json(history)}),
            )
            .await?;
        let messages = rewritten
            .as_ref()
            .and_then(|p| p.get("messages"))
            .and_then(messages_from)
            .unwrap_or_else(|| self.history.clone());
        let tools = self.tools.definitions();
        let base_system = match (
            self.config.system_prompt.clone(),
            self.context_fragments(iteration).await,
        ) {
            (Some(s), Some(f)) => Some(format!("{s}\n\n{f}")),
            (s, f) => s.or(f),
        };
        let rewritten = self
            .post(Stage::ComposeRequest, || {
                json!({
                    "system": base_system,
                    "messages": messages_json(&messages),
                    "tools": tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                    "model": self.model,
                })
            })
            .await;
        let mut system = base_system;
        let mut messages = messages;
        if let Some(p) = rewritten {
            if let Some(m) = p.get("messages").and_then(messages_from) {
                messages = m;
            }
            match p.get("system") {
                Some(Value::String(s)) => system = Some(s.clone()),
                Some(Value::Null) => system = None,
                _ => {}
            }
        }
        Ok(Request {
            system,
            messages,
            tools,
            params: self.request_params(),
        })
    }

    async fn send_request(
        &mut self,
        request: Request,
        iteration: u32,
        cancel: &CancellationToken,
    ) -> Result<Started, TurnStatus> {
        self.apply_reloads("send-request").await;
        let info = json!({"provider": self.provider.id().as_str(), "model": self.model, "iteration": iteration});
        self.pre(Stage::SendRequest, || info.clone()).await?;
        if cancel.is_cancelled() {
            return Err(TurnStatus::Cancelled);
        }
        if let Some(caps) = self.capabilities()
            && let Err(missing) = check_request(self.provider_id(), &self.model, caps, &request)
        {
            self.bus.record(
                "provider.capability.missing",
                json!({"provider": self.provider_id(), "model": self.model, "capability": missing.capability.to_string(), "message": missing.to_string()}),
            );
            return Err(fail(MissingCapability::CODE, missing.to_string()));
        }
        let provider = self.provider.clone();
        let policy = self.config.retry;
        let mut attempt = 0;
        let started = loop {
            self.bus.publish("provider.request.started", info.clone());
            let sent = cancellable(cancel, &provider, provider.provider_send(&request)).await;
            // A failure before anything reached the person (Anthropic's
            // overloaded error right after message_start, say) is retried
            // like a failed send.
            let failure = match sent {
                Some(Ok(stream)) => match self.first_visible(stream, cancel).await {
                    Ok(started) => break started,
                    Err(failure) => failure,
                },
                None => return Err(TurnStatus::Cancelled),
                Some(Err(e)) => e,
            };
            match failure {
                CallError::Guest { error, .. }
                    if RetryPolicy::retryable(&error) && attempt < policy.max_retries =>
                {
                    attempt += 1;
                    let delay = policy.delay(attempt, &error);
                    self.bus.record(
                        "provider.retry",
                        json!({"provider": self.provider_id(), "model": self.model, "attempt": attempt, "max_retries": policy.max_retries, "delay_ms": delay.as_millis() as u64, "code": error.code, "message": self.bus.redact(&error.message)}),
                    );
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = cancel.cancelled() => return Err(TurnStatus::Cancelled),
                    }
                }
                CallError::Cancelled { .. } => return Err(TurnStatus::Cancelled),
                e => return Err(self.provider_failed(e, "")),
            }
        };
        self.post(Stage::SendRequest, || info).await;
        Ok(started)
    }

    /// Read `stream` until its first event the person would see (text,
    /// thinking, a tool call) or its end. A failure before that comes back
    /// as the error, to be retried; cancellation as `Cancelled`.
    async fn first_visible(
        &self,
        mut stream: ResponseStream,
        cancel: &CancellationToken,
    ) -> Result<Started, CallError> {
        let provider = self.provider.clone();
        let mut events = Vec::new();
        loop {
            match cancellable(cancel, &provider, provider.provider_next(&mut stream)).await {
                None => {
                    provider.provider_close(stream).await;
                    return Err(CallError::Cancelled {
                        id: provider.id().clone(),
                        func: "next",
                    });
                }
                Some(Err(e)) => {
                    provider.provider_close(stream).await;
                    return Err(e);
                }
                Some(Ok(None)) => return Ok(Started { stream, events }),
                Some(Ok(Some(batch))) => {
                    if events.len() + batch.len() > MAX_EVENTS_BEFORE_VISIBLE {
                        provider.provider_close(stream).await;
                        return Err(CallError::Guest {
                            id: provider.id().clone(),
                            func: "next",
                            error: Box::new(crate::runtime::services::ext_error(
                                crate::runtime::services::ErrorClass::ExtensionHost,
                                TooLarge::CODE,
                                format!(
                                    "the response sent more than {MAX_EVENTS_BEFORE_VISIBLE} events before any text or tool call; it was abandoned"
                                ),
                            )),
                        });
                    }
                    let visible = batch.iter().any(|e| {
                        matches!(
                            e,
                            StreamEvent::TextDelta(_)
                                | StreamEvent::ThinkingDelta(_)
                                | StreamEvent::ToolCallStart(_)
                        )
                    });
                    events.extend(batch);
                    if visible {
                        return Ok(Started { stream, events });
                    }
                }
            }
        }
    }

    fn provider_failed(&self, e: CallError, partial: &str) -> TurnStatus {
        let (class, code) = match &e {
            CallError::Guest { error, .. } => (format!("{:?}", error.class), error.code.clone()),
            CallError::Cancelled { .. } => return TurnStatus::Cancelled,
            other => ("ExtensionHost".into(), call_error_code(other).to_string()),
        };
        let message = self.bus.redact(&e.to_string());
        self.bus.record(
            "provider.request.failed",
            json!({"provider": self.provider.id().as_str(), "model": self.model, "class": class, "code": code, "message": message, "partial_text": partial}),
        );
        fail(&format!("provider-{code}"), message)
    }

    async fn stream_response(
        &mut self,
        started: Started,
        cancel: &CancellationToken,
        usage: &mut Usage,
    ) -> Result<Assembled, TurnStatus> {
        let Started { mut stream, events } = started;
        self.apply_reloads("stream-response").await;
        let info = json!({"provider": self.provider.id().as_str(), "model": self.model});
        if let Err(stop) = self.pre(Stage::StreamResponse, || info).await {
            self.provider.provider_close(stream).await;
            return Err(stop);
        }
        let started = Instant::now();
        let mut text = String::new();
        let mut thinking: Vec<Thinking> = Vec::new();
        let mut calls: BTreeMap<u32, (String, String, String)> = BTreeMap::new();
        let mut finish = FinishReason::Other;
        let provider = self.provider.clone();
        let mut first = Some(events);
        let mut budget = ResponseBudget::new(self.config.response_limits);
        loop {
            let next = match first.take() {
                Some(events) => Some(Ok(Some(events))),
                None => cancellable(cancel, &provider, provider.provider_next(&mut stream)).await,
            };
            let batch = match next {
                None => {
                    provider.provider_close(stream).await;
                    return Err(TurnStatus::Cancelled);
                }
                Some(Err(e)) => return Err(self.provider_failed(e, &text)),
                Some(Ok(None)) => break,
                Some(Ok(Some(batch))) => batch,
            };
            if let Err(too_large) = count(&mut budget, &batch) {
                provider.provider_close(stream).await;
                let message = too_large.to_string();
                self.bus.record(
                    "provider.request.failed",
                    json!({"provider": self.provider.id().as_str(), "model": self.model, "class": "ExtensionHost", "code": TooLarge::CODE, "message": message, "partial_text": clip(&text)}),
                );
                return Err(fail(TooLarge::CODE, message));
            }
            for ev in batch {
                match ev {
                    StreamEvent::TextDelta(d) => {
                        self.bus.publish("provider.tokens", json!({"delta": d}));
                        text.push_str(&d);
                    }
                    StreamEvent::ThinkingDelta(d) => {
                        if !d.text.is_empty() {
                            self.bus
                                .publish("provider.reasoning", json!({"delta": d.text}));
                        }
                        add_thinking(&mut thinking, d.text, d.signature);
                    }
                    StreamEvent::ToolCallStart(s) => {
                        self.bus.publish(
                            "provider.tool_call.start",
                            json!({"index": s.index, "id": s.id, "name": s.name}),
                        );
                        calls.insert(s.index, (s.id, s.name, String::new()));
                    }
                    StreamEvent::ToolCallDelta(d) => {
                        self.bus.publish(
                            "provider.tool_call.delta",
                            json!({"index": d.index, "delta": d.arguments}),
                        );
                        if let Some(c) = calls.get_mut(&d.index) {
                            c.2.push_str(&d.arguments);
                        }
                    }
                    // Providers may end other blocks too (Anthropic ends
                    // every content block): only tool calls are reported.
                    StreamEvent::ToolCallEnd(index) if calls.contains_key(&index) => {
                        self.bus
                            .publish("provider.tool_call.end", json!({"index": index}));
                    }
                    StreamEvent::ToolCallEnd(_) => {}
                    StreamEvent::Usage(u) => {
                        self.bus.publish("provider.usage", usage_json(&u));
                        add_usage(usage, &u);
                    }
                    StreamEvent::Finish(f) => {
                        self.bus
                            .publish("provider.finish", json!({"reason": finish_str(f)}));
                        finish = f;
                    }
                }
            }
        }
        let calls: Vec<ToolCall> = calls
            .into_values()
            .map(|(id, name, args)| ToolCall {
                id,
                name,
                arguments: if args.trim().is_empty() {
                    "{}".into()
                } else {
                    args
                },
            })
            .collect();
        self.bus.record(
            "provider.request.completed",
            json!({"provider": self.provider.id().as_str(), "model": self.model, "finish": finish_str(finish), "text": text, "tool_calls": calls.len(), "duration_ms": started.elapsed().as_millis() as u64}),
        );
        self.post(Stage::StreamResponse, || {
            json!({"text": text, "tool_calls": calls.iter().map(call_json).collect::<Vec<_>>(), "finish": finish_str(finish)})
        })
        .await;
        Ok(Assembled {
            text,
            thinking,
            calls,
            finish,
        })
    }

    async fn render(&mut self, text: String) -> Result<String, TurnStatus> {
        self.apply_reloads("render").await;
        let rewritten = self.pre(Stage::Render, || json!({"text": text})).await?;
        let text = rewritten
            .as_ref()
            .and_then(|p| p.get("text"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or(text);
        self.bus.record("render", json!({"text": text}));
        self.post(Stage::Render, || json!({"text": text})).await;
        Ok(text)
    }

    /// Decide every call in order (approvals one at a time), run the
    /// approved ones concurrently, append results in call order.
    async fn tool_call_stage(
        &mut self,
        calls: Vec<ToolCall>,
        cancel: &CancellationToken,
    ) -> Result<(), TurnStatus> {
        self.apply_reloads("tool-call").await;
        self.stage_event(Stage::ToolCall, Phase::Pre, json!({"calls": calls.len()}));
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut runnable: Vec<(usize, Arc<crate::runtime::Extension>, ToolCall)> = Vec::new();
        let mut halted: Option<(String, String)> = None;
        for (i, call) in calls.iter().enumerate() {
            let args = call_json(call)["arguments"].take();
            self.bus.publish(
                "tool.proposed",
                json!({"call_id": call.id, "tool": call.name, "arguments": args}),
            );
            match self.admit(call).await {
                Admit::Run(entry, call) => runnable.push((i, entry.ext.clone(), call)),
                Admit::Refuse(result) => results[i] = Some(result),
                Admit::Halt(key) => {
                    halted = Some((call.name.clone(), key));
                    break;
                }
            }
        }
        if let Some((tool, key)) = halted {
            self.stage_event(Stage::ToolCall, Phase::Post, json!({"halted": true}));
            return Err(TurnStatus::Halted { tool, key });
        }
        let permits = Arc::new(Semaphore::new(self.config.tool_parallelism.max(1)));
        let bus = &self.bus;
        let runs = runnable.into_iter().map(|(i, ext, call)| {
            let permits = permits.clone();
            async move {
                let _permit = permits.acquire_owned().await;
                let started = Instant::now();
                bus.record(
                    "tool.started",
                    json!({"call_id": call.id, "tool": call.name}),
                );
                let outcome =
                    cancellable(cancel, &ext, ext.tool_invoke(&call.id, &call.arguments)).await;
                (i, call, outcome, started)
            }
        });
        let finished = futures::future::join_all(runs).await;
        for (i, call, outcome, started) in finished {
            let result = self.tool_result(&call, outcome, started).await;
            results[i] = Some(result);
        }
        let results: Vec<ToolResult> = results
            .into_iter()
            .zip(&calls)
            .map(|(r, c)| {
                r.unwrap_or_else(|| {
                    error_result(c, "tool-execution-failed", "the call produced no result")
                })
            })
            .collect();
        self.append(Message {
            role: Role::Tool,
            content: results.into_iter().map(ContentPart::ToolResult).collect(),
        })
        .await;
        self.stage_event(Stage::ToolCall, Phase::Post, json!({}));
        if cancel.is_cancelled() {
            return Err(TurnStatus::Cancelled);
        }
        Ok(())
    }

    /// One tool call through the same path a turn uses (lookup, schema,
    /// authority stack, `tool-call.pre`, run, `tool-call.post`), without
    /// touching the history. For commands and benchmarks.
    pub async fn call_tool(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, TurnStatus> {
        match self.admit(call).await {
            Admit::Refuse(result) => Ok(result),
            Admit::Halt(key) => Err(TurnStatus::Halted {
                tool: call.name.clone(),
                key,
            }),
            Admit::Run(entry, call) => {
                let started = Instant::now();
                let ext = entry.ext.clone();
                let outcome =
                    cancellable(cancel, &ext, ext.tool_invoke(&call.id, &call.arguments)).await;
                Ok(self.tool_result(&call, outcome, started).await)
            }
        }
    }

    /// Everything before running a call: lookup, argument checks, the
    /// authority stack and the `tool-call.pre` slot.
    async fn admit<'a>(&'a self, call: &ToolCall) -> Admit<'a> {
        let Some(entry) = self.tools.get(&call.name) else {
            let msg = format!(
                "unknown tool `{}`; available tools: {}",
                call.name,
                self.tools.names().join(", ")
            );
            return Admit::Refuse(self.refuse(call, "not-found", &msg));
        };
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
        let hooked = self.hooks.is_hooked(slot);
        let call = if hooked {
            let transformed = self
                .hooks
                .transform(slot, json!({"call": call_json(call)}))
                .await;
            match transformed
                .changed()
                .and_then(|p| p.pointer("/call/arguments").cloned())
            {
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
        let key = match entry.ext.tool_approval_key(&call.arguments).await {
            Ok(k) => k,
            // The tool refused the arguments (a path outside the project):
            // the model gets the tool's own words.
            Err(CallError::Guest { error, .. }) => {
                return Admit::Refuse(self.refuse(&call, &error.code, &error.message));
            }
            Err(e) => {
                return Admit::Refuse(self.refuse(&call, "approval-key-failed", &e.to_string()));
            }
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
        let proposal = Proposal {
            call_id: &call.id,
            tool: &call.name,
            key: &key,
            read_only: entry.spec.read_only,
            description: format!("{}({})", call.name, call.arguments),
        };
        match self.authority.decide(&proposal, &self.interactions).await {
            Decision::Approve => {}
            Decision::Deny(reason) => {
                return Admit::Refuse(self.refuse(&call, "approval-denied", &reason));
            }
            Decision::Halt => return Admit::Halt(key),
        }
        if !hooked {
            return Admit::Run(entry, call);
        }
        let payload = json!({"call": call_json(&call)});
        let denied = self.hooks.guard(slot, &payload).await;
        self.hooks.observe_slot(slot, &payload);
        match denied {
            Some((by, error)) => {
                self.authority
                    .audit_guard(&proposal, by.as_str(), &error.message);
                Admit::Refuse(self.refuse(
                    &call,
                    "approval-denied",
                    &format!("denied by guard `{by}`: {}", error.message),
                ))
            }
            None => Admit::Run(entry, call),
        }
    }

    fn refuse(&self, call: &ToolCall, code: &str, message: &str) -> ToolResult {
        self.bus.record("tool.failed", json!({"call_id": call.id, "tool": call.name, "class": "ToolTerminal", "code": code, "message": message}));
        error_result(call, code, message)
    }

    async fn tool_result(
        &self,
        call: &ToolCall,
        outcome: Option<
            Result<crate::runtime::bindings::stud::extension::tool_types::ToolOutput, CallError>,
        >,
        started: Instant,
    ) -> ToolResult {
        let duration_ms = started.elapsed().as_millis() as u64;
        let (content, is_error) = match outcome {
            None => {
                self.bus.record(
                    "tool.cancelled",
                    json!({"call_id": call.id, "tool": call.name, "reason": "turn cancelled"}),
                );
                return error_result(
                    call,
                    "tool-cancelled",
                    "the turn was cancelled while this tool ran",
                );
            }
            Some(Ok(out)) => {
                let text = result_text(&out.content);
                self.bus.record(
                    "tool.succeeded",
                    json!({"call_id": call.id, "tool": call.name, "output": clip(&text), "details": out.details.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()), "duration_ms": duration_ms}),
                );
                (
                    limit_output(out.content, self.config.tool_output_limit),
                    false,
                )
            }
            Some(Err(e)) => {
                let (class, code) = match &e {
                    CallError::Guest { error, .. } => {
                        (format!("{:?}", error.class), error.code.clone())
                    }
                    other => (
                        "ToolTerminal".to_string(),
                        call_error_code(other).to_string(),
                    ),
                };
                self.bus.record("tool.failed", json!({"call_id": call.id, "tool": call.name, "class": class, "code": code, "message": e.to_string(), "duration_ms": duration_ms}));
                let message = match &e {
                    CallError::Guest { error, .. } => error.message.clone(),
                    other => other.to_string(),
                };
                (
                    vec![ResultPart::Text(format!("error [{code}]: {message}"))],
                    true,
                )
            }
        };
        let result = ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        };
        let payload = || json!({"call": call_json(call), "result": {"content": result_parts_json(&result.content), "is_error": is_error}});
        let rewritten = match self.hooks.run(Stage::ToolCall, Phase::Post, payload).await {
            SlotOutcome::Continue(p) => p,
            SlotOutcome::Denied { .. } => None,
        };
        match rewritten.and_then(|p| p.pointer("/result/content").and_then(result_parts_from)) {
            Some(content) => ToolResult { content, ..result },
            None => result,
        }
    }
}

enum Admit<'a> {
    Run(&'a ToolEntry, ToolCall),
    Refuse(ToolResult),
    Halt(String),
}

fn error_result(call: &ToolCall, code: &str, message: &str) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: vec![ResultPart::Text(format!("error [{code}]: {message}"))],
        is_error: true,
    }
}

/// Await an extension call, stopping it if the turn is cancelled. `None`
/// means cancelled. The call future is never dropped mid-call unless the
/// guest ignores cancellation past the grace period.
async fn cancellable<T>(
    cancel: &CancellationToken,
    ext: &crate::runtime::Extension,
    call: impl std::future::Future<Output = Result<T, CallError>>,
) -> Option<Result<T, CallError>> {
    tokio::pin!(call);
    tokio::select! {
        r = &mut call => match r {
            Err(CallError::Cancelled { .. }) => None,
            r => Some(r),
        },
        _ = cancel.cancelled() => {
            ext.cancel();
            let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
            None
        }
    }
}

/// Count what a batch of stream events adds against the response limits.
fn count(budget: &mut ResponseBudget, batch: &[StreamEvent]) -> Result<(), TooLarge> {
    for ev in batch {
        match ev {
            StreamEvent::TextDelta(d) => budget.add(Part::Text, d.len())?,
            StreamEvent::ThinkingDelta(d) => budget.add(
                Part::Thinking,
                d.text.len() + d.signature.as_ref().map_or(0, String::len),
            )?,
            StreamEvent::ToolCallStart(s) => {
                budget.add(Part::ToolArguments, s.id.len() + s.name.len())?
            }
            StreamEvent::ToolCallDelta(d) => budget.add(Part::ToolArguments, d.arguments.len())?,
            _ => {}
        }
    }
    Ok(())
}

fn call_error_code(e: &CallError) -> &'static str {
    match e {
        CallError::Timeout { .. } => "execution-timeout",
        CallError::Cancelled { .. } => "cancelled",
        CallError::MemoryLimit { .. } => "memory-limit",
        CallError::Trap { .. } => "extension-crashed",
        CallError::Guest { .. } => "guest-error",
        CallError::Instantiate { .. } => "extension-unavailable",
    }
}

fn finish_str(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool-calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content-filter",
        FinishReason::Error => "error",
        FinishReason::Other => "other",
    }
}

/// Cut text parts past `limit` bytes in total, with a marker that tells
/// the model how to get the rest.
fn limit_output(parts: Vec<ResultPart>, limit: usize) -> Vec<ResultPart> {
    let total: usize = parts
        .iter()
        .map(|p| {
            if let ResultPart::Text(t) = p {
                t.len()
            } else {
                0
            }
        })
        .sum();
    if total <= limit {
        return parts;
    }
    let mut room = limit;
    let mut out = Vec::with_capacity(parts.len() + 1);
    for part in parts {
        match part {
            ResultPart::Text(t) if t.len() > room => {
                let mut end = room;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                room = 0;
                if end > 0 {
                    out.push(ResultPart::Text(t[..end].to_string()));
                }
            }
            ResultPart::Text(t) => {
                room -= t.len();
                out.push(ResultPart::Text(t));
            }
            image => out.push(image),
        }
    }
    out.push(ResultPart::Text(format!(
        "\n[output truncated: {limit} of {total} bytes shown. Ask for less at a time: read with offset and limit, grep with a narrower pattern, path or glob, or pipe a command through head, tail or grep]"
    )));
    out
}

fn clip(text: &str) -> String {
    if text.chars().count() <= EVENT_OUTPUT_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(EVENT_OUTPUT_CHARS).collect();
    format!("{cut}... [truncated]")
}

impl Session {
    /// The cost of `usage` at the current model's price (0 without one).
    /// `budget-exceeded` once the session (with this turn's `usage`) has
    /// cost its budget.
    fn check_budget(&self, usage: &Usage) -> Result<(), TurnStatus> {
        let Some(budget) = self.config.max_cost_usd else {
            return Ok(());
        };
        let spent = self.cost_usd + self.turn_cost(usage);
        if spent < budget {
            return Ok(());
        }
        let e = BudgetExceeded { spent, budget };
        self.bus.record(
            "budget.exceeded",
            json!({"spent_usd": spent, "budget_usd": budget}),
        );
        Err(fail("budget-exceeded", e.to_string()))
    }

    /// Whether the session has cost its budget (`--max-cost`); no turn
    /// can start then.
    pub fn budget_spent(&self) -> bool {
        self.config
            .max_cost_usd
            .is_some_and(|budget| self.cost_usd >= budget)
    }

    pub(super) fn turn_cost(&self, usage: &Usage) -> f64 {
        self.config
            .pricing
            .get(&self.model)
            .map(|p| cost(usage, p))
            .unwrap_or(0.0)
    }
}

fn zero_usage() -> Usage {
    Usage {
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}

/// A thinking delta: a signature closes the block it ends (Anthropic sends
/// one per block), so text after it starts a new block; a signature with
/// no open block is a block of its own (an opaque, redacted one).
fn add_thinking(blocks: &mut Vec<Thinking>, text: String, signature: Option<String>) {
    let open = blocks.last_mut().filter(|b| b.signature.is_none());
    match open {
        Some(block) => {
            block.text.push_str(&text);
            block.signature = signature;
        }
        None if text.is_empty() && signature.is_none() => {}
        None => blocks.push(Thinking { text, signature }),
    }
}

/// The size of the prompts counted in `u`, cached parts included.
fn prompt_tokens(u: &Usage) -> u64 {
    u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
}

pub(super) fn add_usage(total: &mut Usage, u: &Usage) {
    total.input_tokens += u.input_tokens;
    total.output_tokens += u.output_tokens;
    total.cache_read_tokens += u.cache_read_tokens;
    total.cache_write_tokens += u.cache_write_tokens;
}

pub fn usage_json(u: &Usage) -> Value {
    json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_blocks_stay_apart_with_their_signatures() {
        let mut blocks = Vec::new();
        add_thinking(&mut blocks, "first ".into(), None);
        add_thinking(&mut blocks, "block".into(), None);
        add_thinking(&mut blocks, String::new(), Some("sig1".into()));
        // A redacted block: only opaque data.
        add_thinking(&mut blocks, String::new(), Some("redacted:abc".into()));
        add_thinking(&mut blocks, "second".into(), None);
        add_thinking(&mut blocks, String::new(), Some("sig2".into()));
        let got: Vec<(&str, Option<&str>)> = blocks
            .iter()
            .map(|b| (b.text.as_str(), b.signature.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("first block", Some("sig1")),
                ("", Some("redacted:abc")),
                ("second", Some("sig2"))
            ]
        );
    }

    #[test]
    fn long_output_is_cut_with_a_marker() {
        let parts = vec![
            ResultPart::Text("é".repeat(10)),
            ResultPart::Text("tail".into()),
        ];
        let out = limit_output(parts.clone(), 100);
        assert_eq!(out.len(), 2, "under the limit: untouched");
        let out = limit_output(parts, 5);
        let ResultPart::Text(first) = &out[0] else {
            panic!()
        };
        assert_eq!(first, "éé");
        let ResultPart::Text(marker) = out.last().unwrap() else {
            panic!()
        };
        assert!(marker.contains("5 of 24 bytes shown"), "{marker}");
    }
}
