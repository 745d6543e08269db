//! STREAM_RESPONSE: read the provider's stream to its end, publishing what
//! arrives as it arrives.

use crate::kernel::act::ActParts;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::Lane;
use super::assemble::{Assembled, Assembly, Seen, finish_str};
use super::cancel::cancellable;
use super::send::Started;
use super::tool_result::clip;
use crate::kernel::payloads::call_view;
use crate::kernel::response_limits::TooLarge;
use crate::kernel::turn_status::{TurnStatus, fail};
use crate::kernel::usage::{add_usage, usage_event};
use crate::manifest::Stage;
use crate::runtime::domain::Usage;
use stud_protocol::events::KernelEvent;
use stud_protocol::hook_payloads::{SlotPayload, StreamDone, StreamStart};
use stud_protocol::replay_trace::TraceEntry;

pub(crate) async fn stream_response<L: Lane>(
    lane: &mut L,
    started: Started,
    cancel: &CancellationToken,
    usage: &mut Usage,
) -> Result<Assembled, TurnStatus> {
    lane.boundary("stream-response").await;
    lane.parts().stream_response(started, cancel, usage).await
}

impl ActParts<'_> {
    async fn stream_response(
        &self,
        started: Started,
        cancel: &CancellationToken,
        usage: &mut Usage,
    ) -> Result<Assembled, TurnStatus> {
        let Started {
            mut stream,
            events,
            request,
        } = started;
        let usage_before = *usage;
        let info = StreamStart {
            provider: self.roster.provider.id().to_string(),
            model: self.roster.model.clone(),
        }
        .into_value();
        if let Err(stop) = self.pre(Stage::StreamResponse, || info).await {
            self.roster.provider.provider_close(stream).await;
            return Err(stop);
        }
        let started = Instant::now();
        let provider = self.roster.provider.clone();
        let mut first = Some(events);
        let mut assembly = Assembly::new(self.config.response_limits);
        loop {
            let next = match first.take() {
                Some(events) => Some(Ok(Some(events))),
                None => cancellable(cancel, provider.provider_next(&mut stream)).await,
            };
            let batch = match next {
                None => {
                    provider.provider_close(stream).await;
                    return Err(TurnStatus::Cancelled);
                }
                Some(Err(e)) => return Err(self.provider_failed(e, assembly.text())),
                Some(Ok(None)) => break,
                Some(Ok(Some(batch))) => batch,
            };
            match assembly.fold(batch) {
                Ok(seen) => self.publish_seen(seen, usage),
                Err(too_large) => {
                    provider.provider_close(stream).await;
                    let message = too_large.to_string();
                    self.bus.record(KernelEvent::ProviderRequestFailed {
                        provider: self.roster.provider.id().to_string(),
                        model: self.roster.model.clone(),
                        class: "ExtensionHost".into(),
                        code: TooLarge::CODE.into(),
                        message: message.clone(),
                        partial_text: clip(assembly.text()),
                    });
                    return Err(fail(TooLarge::CODE, message));
                }
            }
        }
        let done = assembly.finish();
        self.bus.trace().push(TraceEntry::Response {
            agent: self.bus.agent_path().map(str::to_string),
            request,
            events: crate::kernel::replay::stream_json::events_json(
                &done.text,
                &done.thinking,
                &done.calls,
                &usage_less(usage, &usage_before),
                done.finish,
            ),
        });
        self.bus.record(KernelEvent::ProviderRequestCompleted {
            provider: self.roster.provider.id().to_string(),
            model: self.roster.model.clone(),
            finish: finish_str(done.finish).into(),
            text: done.text.clone(),
            tool_calls: done.calls.len() as u64,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        self.post(Stage::StreamResponse, || {
            StreamDone {
                text: done.text.clone(),
                tool_calls: done.calls.iter().map(call_view).collect(),
                finish: finish_str(done.finish).into(),
            }
            .into_value()
        })
        .await?;
        Ok(done)
    }

    fn publish_seen(&self, seen: Vec<Seen>, usage: &mut Usage) {
        for s in seen {
            match s {
                Seen::Text(d) => self.bus.publish(KernelEvent::ProviderTokens { delta: d }),
                Seen::Reasoning(d) => self
                    .bus
                    .publish(KernelEvent::ProviderReasoning { delta: d }),
                Seen::CallStart { index, id, name } => {
                    self.bus.publish(KernelEvent::ProviderToolCallStart {
                        index: index as u64,
                        id,
                        name,
                    })
                }
                Seen::CallDelta { index, delta } => {
                    self.bus.publish(KernelEvent::ProviderToolCallDelta {
                        index: index as u64,
                        delta,
                    })
                }
                Seen::CallEnd(index) => self.bus.publish(KernelEvent::ProviderToolCallEnd {
                    index: index as u64,
                }),
                Seen::Usage(u) => {
                    self.bus.publish(KernelEvent::ProviderUsage {
                        usage: usage_event(&u),
                    });
                    add_usage(usage, &u);
                }
                Seen::Finish(f) => self.bus.publish(KernelEvent::ProviderFinish {
                    reason: finish_str(f).into(),
                }),
            }
        }
    }
}

/// What `now` counts beyond `before`.
fn usage_less(now: &Usage, before: &Usage) -> Usage {
    Usage {
        input_tokens: now.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: now.output_tokens.saturating_sub(before.output_tokens),
        cache_read_tokens: now
            .cache_read_tokens
            .saturating_sub(before.cache_read_tokens),
        cache_write_tokens: now
            .cache_write_tokens
            .saturating_sub(before.cache_write_tokens),
    }
}
