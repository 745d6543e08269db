use wasmtime::component::ResourceAny;

use super::{guest_call, infallible};
use crate::runtime::bindings::stud::extension::provider_types::{ModelInfo, Request, StreamEvent};
use crate::runtime::error::CallError;
use crate::runtime::extension::{Extension, KindGuest};

/// A response in progress inside the provider's instance. It is tied to
/// that instance: if the instance faults, the stream ends with the error.
pub struct ResponseStream {
    resource: ResourceAny,
    generation: u64,
    done: bool,
}

impl Extension {
    pub async fn provider_models(&self) -> Result<Vec<ModelInfo>, CallError> {
        guest_call!(self, Provider, "models", |g, store| infallible(
            g.call_models(store).await
        ))
    }

    pub async fn provider_send(&self, request: &Request) -> Result<ResponseStream, CallError> {
        let mut live = self.ready().await?;
        let (KindGuest::Provider(g), clock) = self.begin(&mut live, "send")? else {
            return Err(self.wrong_kind("send"));
        };
        let (outcome, generation) = match live.as_mut() {
            Some(inst) => {
                let generation = inst.generation;
                let call = g.call_send(&mut inst.store, request);
                (self.watched(clock, call).await, generation)
            }
            None => return Err(self.wrong_kind("send")),
        };
        let resource = self.finish(&mut live, "send", outcome)?;
        Ok(ResponseStream {
            resource,
            generation,
            done: false,
        })
    }

    /// The next events; `None` once the stream ended.
    pub async fn provider_next(
        &self,
        stream: &mut ResponseStream,
    ) -> Result<Option<Vec<StreamEvent>>, CallError> {
        if stream.done {
            return Ok(None);
        }
        let mut live = self.ready().await?;
        if live.as_ref().map(|i| i.generation) != Some(stream.generation) {
            stream.done = true;
            return Err(CallError::Instantiate {
                id: self.id().clone(),
                message: "the provider restarted; this response stream is gone".into(),
            });
        }
        let (KindGuest::Provider(g), clock) = self.begin(&mut live, "next")? else {
            return Err(self.wrong_kind("next"));
        };
        let outcome = match live.as_mut() {
            Some(inst) => {
                let streams = g.response_stream();
                let call = streams.call_next(&mut inst.store, stream.resource);
                self.watched(clock, call).await
            }
            None => return Err(self.wrong_kind("next")),
        };
        let result = self.finish(&mut live, "next", outcome);
        match &result {
            Ok(None) | Err(_) => {
                stream.done = true;
                if let Some(inst) = live.as_mut().filter(|i| i.generation == stream.generation) {
                    let _ = stream.resource.resource_drop_async(&mut inst.store).await;
                }
            }
            Ok(Some(_)) => {}
        }
        result
    }

    /// Drop a stream early (the turn was cancelled).
    pub async fn provider_close(&self, mut stream: ResponseStream) {
        if stream.done {
            return;
        }
        stream.done = true;
        let mut live = self.live_guard().await;
        if let Some(inst) = live
            .as_mut()
            .filter(|i| i.generation == stream.generation && !i.busy)
        {
            let _ = stream.resource.resource_drop_async(&mut inst.store).await;
        }
    }
}
