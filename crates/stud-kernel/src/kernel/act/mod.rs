//! Act: the message loop as one reusable piece. Given a transcript (a
//! [`Lane`]), a system prompt, a tool envelope, an optional completion
//! tool and an iteration bound, it runs COMPOSE_REQUEST -> SEND_REQUEST ->
//! STREAM_RESPONSE -> TOOL_CALL until the model stops, the completion tool
//! is called with valid arguments, or the bound is reached, then RENDER.
//! A plain turn runs it on the session's history; a state-machine stage
//! execution runs it on a fresh transcript of its own.

mod admit;
mod assemble;
mod cancel;
mod compose;
mod editor_tool;
mod lane;
mod parts;
mod render;
mod run_tool;
mod send;
mod slots;
mod stage_gate;
mod stream;
mod tool_result;
mod tool_stage;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

pub(crate) use admit::Called;

/// Why a call the person made did not run in a headless run.
pub(crate) const NO_ONE_TO_ASK: &str = "it needs your approval and this run cannot ask";
pub(crate) use lane::{Lane, MainLane, StageLane};
pub(crate) use parts::ActParts;
pub(crate) use stage_gate::StageAuthority;

use super::compaction::{raw_estimate, tools_json_len};
use super::retry::CONTEXT_OVERFLOW;
use super::turn_status::{TurnStatus, fail};
use super::usage::prompt_tokens;
pub(crate) use super::workflow_def::Completion;
use crate::manifest::Stage;
use crate::runtime::domain::{ContentPart, Message, Role, Usage};
use crate::runtime::domain::{FinishReason, Request};

/// What bounds the number of provider requests.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bound {
    /// A plain turn: reaching it is an error (`loop-bound-exceeded`).
    MaxIterations(u32),
    /// A stage: reaching it ends Act normally with `capHit`.
    TurnCap(u32),
}

/// Everything that makes one Act differ from another.
pub(crate) struct ActSpec {
    /// The base system prompt; context fragments are added after it.
    pub system: Option<String>,
    pub completion: Option<Completion>,
    pub bound: Bound,
    /// A state machine's stage: its envelope narrows the tools offered and
    /// is the first layer of the authority stack.
    pub stage: Option<StageAuthority>,
}

/// How an Act ended (every other ending is a [`TurnStatus`] error).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ActEnd {
    /// The model answered without calling a tool; the rendered text.
    Answered(String),
    /// The completion tool was called with valid arguments.
    Completed { arguments: Value, text: String },
    /// The stage's `turnCap` was reached.
    CapHit,
}

/// Run the loop until it ends. `iterations` and `usage` count what was
/// spent even when it ends in an error.
pub(crate) async fn run<L: Lane>(
    lane: &mut L,
    spec: &ActSpec,
    cancel: &CancellationToken,
    iterations: &mut u32,
    usage: &mut Usage,
) -> Result<ActEnd, TurnStatus> {
    loop {
        if cancel.is_cancelled() {
            return Err(TurnStatus::Cancelled);
        }
        match spec.bound {
            Bound::MaxIterations(max) if *iterations >= max => {
                return Err(fail(
                    "loop-bound-exceeded",
                    format!(
                        "stopped after {max} provider requests (runtime.continuation.maxIterations); tool calls from earlier requests may already have run"
                    ),
                ));
            }
            Bound::TurnCap(cap) if *iterations >= cap => return Ok(ActEnd::CapHit),
            _ => {}
        }
        lane.parts().check_budget(usage)?;
        *iterations += 1;
        let sent = request(lane, spec, *iterations, cancel)
            .instrument(stage_span(Stage::SendRequest))
            .await;
        // What the request carries is in the log before its answer is read.
        lane.settle().await;
        let (started, raw) = sent?;
        let prompt_before = prompt_tokens(usage);
        let assembled = stream::stream_response(lane, started, cancel, usage)
            .instrument(stage_span(Stage::StreamResponse))
            .await?;
        lane.calibrate(raw, prompt_tokens(usage) - prompt_before);
        lane.append(assembled.message()).await;
        if assembled.finish == FinishReason::Length {
            return Err(truncated(lane, assembled).await);
        }
        if assembled.calls.is_empty() {
            let text = render::render(lane, assembled.text)
                .instrument(stage_span(Stage::Render))
                .await?;
            return Ok(ActEnd::Answered(text));
        }
        let text = assembled.text;
        if let Some(arguments) = tool_stage::tool_call_stage(lane, spec, assembled.calls, cancel)
            .instrument(stage_span(Stage::ToolCall))
            .await?
        {
            lane.settle().await;
            let text = if text.is_empty() {
                text
            } else {
                render::render(lane, text).await?
            };
            return Ok(ActEnd::Completed { arguments, text });
        }
    }
}

/// COMPOSE_REQUEST (fitted into the context window) and SEND_REQUEST,
/// once more after compacting harder when the provider says the request
/// overflowed. Also returns the estimated size, for calibration.
async fn request<L: Lane>(
    lane: &mut L,
    spec: &ActSpec,
    iteration: u32,
    cancel: &CancellationToken,
) -> Result<(send::Started, u64), TurnStatus> {
    let mut request = compose::compose_request(lane, spec, iteration)
        .instrument(stage_span(Stage::ComposeRequest))
        .await?;
    if lane.fit(&request, false).await {
        request = compose::compose_request(lane, spec, iteration).await?;
    }
    let raw = estimate(&request);
    match send::send_request(lane, request, iteration, cancel).await {
        Err(TurnStatus::Failed { code, .. }) if code == format!("provider-{CONTEXT_OVERFLOW}") => {
            // The provider counted more than we estimated: compact harder
            // and try once more.
            let request = compose::compose_request(lane, spec, iteration).await?;
            lane.fit(&request, true).await;
            let request = compose::compose_request(lane, spec, iteration).await?;
            let raw = estimate(&request);
            Ok((
                send::send_request(lane, request, iteration, cancel).await?,
                raw,
            ))
        }
        other => Ok((other?, raw)),
    }
}

/// A stage as a `tracing` span (`--debug`); `send-request` includes the
/// compose it needs.
fn stage_span(stage: Stage) -> tracing::Span {
    tracing::debug_span!("stage", name = %stage)
}

fn estimate(r: &Request) -> u64 {
    raw_estimate(r.system.as_deref(), &r.messages, tools_json_len(r))
}

/// Cut off at the output limit: the text is shown as far as it got, but
/// not as a finished answer, and tool calls whose arguments may be cut are
/// not run.
async fn truncated<L: Lane>(lane: &mut L, assembled: assemble::Assembled) -> TurnStatus {
    let calls = assembled.calls.len();
    let shown = match render::render(lane, assembled.text).await {
        Ok(shown) => shown,
        Err(stop) => return stop,
    };
    let what = if calls == 0 {
        "its answer".to_string()
    } else {
        format!("its answer; its {calls} tool call(s) were not run")
    };
    fail(
        "response-truncated",
        format!(
            "the model reached its output limit and stopped mid-way through {what} ({} characters shown); ask it to continue, or raise active.maxTokens",
            shown.chars().count()
        ),
    )
}

impl assemble::Assembled {
    /// The assistant message the response becomes in the transcript.
    fn message(&self) -> Message {
        let mut content: Vec<ContentPart> = self
            .thinking
            .iter()
            .cloned()
            .map(ContentPart::Thinking)
            .collect();
        if !self.text.is_empty() {
            content.push(ContentPart::Text(self.text.clone()));
        }
        content.extend(self.calls.iter().cloned().map(ContentPart::ToolCall));
        Message {
            role: Role::Assistant,
            content,
        }
    }
}
