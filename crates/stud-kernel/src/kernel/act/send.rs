//! SEND_REQUEST: capability checks, the provider call, and retries of
//! failures that happen before anything visible reached the person.

use crate::kernel::act::ActParts;
use tokio_util::sync::CancellationToken;

use super::Lane;
use super::cancel::{call_error_code, cancellable};
use crate::kernel::capabilities::{MissingCapability, check_request, leave_out_result_images};
use crate::kernel::response_limits::TooLarge;
use crate::kernel::retry::RetryPolicy;
use crate::kernel::turn_status::{TurnStatus, fail};
use crate::manifest::Stage;
use crate::runtime::CallError;
use crate::runtime::domain::{Request, StreamEvent};
use crate::runtime::kinds::ResponseStream;
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{SendRequest, SlotPayload};
use stud_protocol::replay_trace::TraceEntry;

/// Events a response may send before its first visible one (usage,
/// keep-alives); more is a broken or hostile endpoint.
const MAX_EVENTS_BEFORE_VISIBLE: usize = 4096;

/// The code of a turn a replay stopped: its request was not recorded.
pub(crate) const REPLAY_DIVERGED: &str = "replay-diverged";

/// A response whose first visible events (or end) have arrived. A stream
/// that already ended answers `next` with its end, without a guest call.
pub(crate) struct Started {
    pub stream: ResponseStream,
    /// Everything read so far, in order.
    pub events: Vec<StreamEvent>,
    /// The digest of the request it answers (for the trace).
    pub request: String,
}

pub(crate) async fn send_request<L: Lane>(
    lane: &mut L,
    request: Request,
    iteration: u32,
    cancel: &CancellationToken,
) -> Result<Started, TurnStatus> {
    lane.boundary("send-request").await;
    lane.parts().send_request(request, iteration, cancel).await
}

impl ActParts<'_> {
    pub(crate) async fn send_request(
        &self,
        request: Request,
        iteration: u32,
        cancel: &CancellationToken,
    ) -> Result<Started, TurnStatus> {
        let info = SendRequest {
            provider: self.roster.provider.id().to_string(),
            model: self.roster.model.clone(),
            iteration,
        }
        .into_value();
        self.pre(Stage::SendRequest, || info.clone()).await?;
        if cancel.is_cancelled() {
            return Err(TurnStatus::Cancelled);
        }
        let mut request = request;
        if let Some(caps) = self.roster.capabilities()
            && !caps.vision
        {
            leave_out_result_images(&mut request);
        }
        if let Some(caps) = self.roster.capabilities()
            && let Err(missing) =
                check_request(self.provider_id(), &self.roster.model, caps, &request)
        {
            self.bus.record(KernelEvent::ProviderCapabilityMissing {
                provider: self.provider_id().into(),
                model: self.roster.model.clone(),
                capability: missing.capability.to_string(),
                message: missing.to_string(),
            });
            return Err(fail(MissingCapability::CODE, missing.to_string()));
        }
        let (sha256, bytes, parts) = crate::kernel::request_digest::digests(&request);
        self.bus.record(KernelEvent::ProviderRequestSent {
            provider: self.provider_id().into(),
            model: self.roster.model.clone(),
            iteration: iteration.into(),
            sha256: sha256.clone(),
            bytes,
        });
        let agent = self.bus.agent_path().map(str::to_string);
        self.bus.trace().push(TraceEntry::Request {
            agent: agent.clone(),
            sha256: sha256.clone(),
            bytes,
            parts: parts.clone(),
        });
        if let Some(replay) = self.bus.replayer() {
            // A replay: the response recorded for these very bytes, or
            // the branch stops.
            self.first_request.open();
            let events = replay
                .respond(agent.as_deref(), &sha256, &parts)
                .map_err(|d| fail(REPLAY_DIVERGED, d.to_string()))?;
            self.post(Stage::SendRequest, || info).await?;
            return Ok(Started {
                stream: ResponseStream::ended(),
                events,
                request: sha256,
            });
        }
        let provider = self.roster.provider.clone();
        let policy = self.config.retry;
        let mut attempt = 0;
        let started = loop {
            self.bus.publish(KernelEvent::ProviderRequestStarted {
                provider: self.provider_id().into(),
                model: self.roster.model.clone(),
                iteration: iteration.into(),
            });
            let sent = cancellable(cancel, provider.provider_send(&request)).await;
            self.first_request.open();
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
                    self.bus.record(KernelEvent::ProviderRetry {
                        provider: self.provider_id().into(),
                        model: self.roster.model.clone(),
                        attempt: attempt.into(),
                        max_retries: policy.max_retries.into(),
                        delay_ms: delay.as_millis() as u64,
                        code: error.code.clone(),
                        message: self.bus.redact(&error.message),
                    });
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = cancel.cancelled() => return Err(TurnStatus::Cancelled),
                    }
                }
                CallError::Cancelled { .. } => return Err(TurnStatus::Cancelled),
                e => return Err(self.provider_failed(e, "")),
            }
        };
        self.post(Stage::SendRequest, || info).await?;
        Ok(Started {
            request: sha256,
            ..started
        })
    }

    /// Read `stream` until its first event the person would see (text,
    /// thinking, a tool call) or its end. A failure before that comes back
    /// as the error, to be retried; cancellation as `Cancelled`.
    async fn first_visible(
        &self,
        mut stream: ResponseStream,
        cancel: &CancellationToken,
    ) -> Result<Started, CallError> {
        let provider = self.roster.provider.clone();
        let mut events = Vec::new();
        loop {
            match cancellable(cancel, provider.provider_next(&mut stream)).await {
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
                Some(Ok(None)) => {
                    return Ok(Started {
                        stream,
                        events,
                        request: String::new(),
                    });
                }
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
                        return Ok(Started {
                            stream,
                            events,
                            request: String::new(),
                        });
                    }
                }
            }
        }
    }

    pub(crate) fn provider_failed(&self, e: CallError, partial: &str) -> TurnStatus {
        let (class, code) = match &e {
            CallError::Guest { error, .. } => (format!("{:?}", error.class), error.code.clone()),
            CallError::Cancelled { .. } => return TurnStatus::Cancelled,
            other => ("ExtensionHost".into(), call_error_code(other).to_string()),
        };
        let message = self.bus.redact(&e.to_string());
        self.bus.record(KernelEvent::ProviderRequestFailed {
            provider: self.roster.provider.id().to_string(),
            model: self.roster.model.clone(),
            class,
            code: code.clone(),
            message: message.clone(),
            partial_text: partial.into(),
        });
        fail(&format!("provider-{code}"), message)
    }
}
