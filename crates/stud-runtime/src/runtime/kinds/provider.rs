use wasmtime::component::ResourceAny;

use super::{guest_call, infallible};
use crate::runtime::contract::v0_1::stud::extension::provider_types::{
    ModelInfo, Request, StreamEvent,
};
use crate::runtime::error::CallError;
use crate::runtime::extension::{Extension, KindGuest, wrong_kind_error};
use crate::runtime::services::{ErrorClass, ext_error};

/// A response in progress inside the provider's instance. It is tied to
/// that instance: if the instance faults, the stream ends with the error.
pub struct ResponseStream {
    /// `None`: a stream made [`ended`](ResponseStream::ended), never in a
    /// guest.
    resource: Option<ResourceAny>,
    generation: u64,
    done: bool,
}

impl ResponseStream {
    /// A stream that has already ended: the events of a response that did
    /// not come from a guest (a replay's recorded one) are all read before.
    pub fn ended() -> Self {
        ResponseStream {
            resource: None,
            generation: 0,
            done: true,
        }
    }
}

impl Extension {
    pub async fn provider_models(&self) -> Result<Vec<ModelInfo>, CallError> {
        guest_call!(self, Provider, "models", |g, store| infallible(
            g.call_models(store).await
        ))
    }

    pub async fn provider_send(&self, request: &Request) -> Result<ResponseStream, CallError> {
        let request = request.clone();
        let (resource, generation) = self
            .run_call("send", move |inst| {
                Box::pin(async move {
                    let KindGuest::Provider(g) = inst.guest.clone() else {
                        return Ok(Err(wrong_kind_error("send")));
                    };
                    let generation = inst.generation;
                    let sent = g.call_send(&mut inst.store, &request).await?;
                    Ok(sent.map(|resource| (resource, generation)))
                })
            })
            .await?;
        Ok(ResponseStream {
            resource: Some(resource),
            generation,
            done: false,
        })
    }

    /// The next events; `None` once the stream ended.
    pub async fn provider_next(
        &self,
        stream: &mut ResponseStream,
    ) -> Result<Option<Vec<StreamEvent>>, CallError> {
        let Some(resource) = stream.resource.filter(|_| !stream.done) else {
            return Ok(None);
        };
        let generation = stream.generation;
        let result = self
            .run_call("next", move |inst| {
                Box::pin(async move {
                    let KindGuest::Provider(g) = inst.guest.clone() else {
                        return Ok(Err(wrong_kind_error("next")));
                    };
                    if inst.generation != generation {
                        return Ok(Err(ext_error(
                            ErrorClass::ProviderTransient,
                            "stream-gone",
                            "the provider restarted; this response stream is gone",
                        )));
                    }
                    let next = g
                        .response_stream()
                        .call_next(&mut inst.store, resource)
                        .await?;
                    if !matches!(next, Ok(Some(_))) {
                        let _ = resource.resource_drop_async(&mut inst.store).await;
                    }
                    Ok(next)
                })
            })
            .await;
        if !matches!(result, Ok(Some(_))) {
            stream.done = true;
        }
        result
    }

    /// Drop a stream early (the turn was cancelled).
    pub async fn provider_close(&self, mut stream: ResponseStream) {
        let Some(resource) = stream.resource.filter(|_| !stream.done) else {
            return;
        };
        stream.done = true;
        let generation = stream.generation;
        let _ = self
            .run_on_live("drop-stream", move |inst| {
                Box::pin(async move {
                    if inst.generation == generation {
                        resource.resource_drop_async(&mut inst.store).await?;
                    }
                    Ok(Ok(()))
                })
            })
            .await;
    }
}
