//! Providers: adapters that turn a request into a stream of model events.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::provider_types::{
    FinishReason, ModelCapabilities, ModelInfo, Request as ProviderRequest, RequestParams,
    StreamEvent, ThinkingLevel, ToolCallDelta, ToolCallStart, ToolDefinition,
};

/// A provider. `models` declares what each model can do (the kernel checks
/// requests against it); `send` starts a response.
pub trait Provider: Default + 'static {
    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// The models this provider serves and what each supports.
    fn models(&self) -> Vec<ModelInfo>;

    /// Start a response; the kernel pulls it from the returned stream.
    fn send(&mut self, request: ProviderRequest) -> Result<Box<dyn EventStream>, Error>;
}

/// A response in progress, pulled by the kernel. Return the events available
/// now (at least one) or `None` at the end; the last event must be
/// `StreamEvent::Finish`.
pub trait EventStream: 'static {
    /// The next batch of events, or `None` when the response is over.
    fn next(&mut self) -> Result<Option<Vec<StreamEvent>>, Error>;
}

/// A stream over events computed up front (tests, scripted providers).
pub struct VecStream {
    events: std::vec::IntoIter<Vec<StreamEvent>>,
}

impl VecStream {
    /// Each inner vector is delivered by one `next` call.
    pub fn new(batches: Vec<Vec<StreamEvent>>) -> Self {
        VecStream {
            events: batches.into_iter(),
        }
    }
}

impl EventStream for VecStream {
    fn next(&mut self) -> Result<Option<Vec<StreamEvent>>, Error> {
        Ok(self.events.next())
    }
}

/// Called by `export_provider!`; converts between WIT and SDK types.
#[doc(hidden)]
pub mod glue {
    use std::cell::RefCell;

    use super::*;
    use crate::__private::Instance;
    use crate::wit::stud::extension::types::ExtError;

    /// The guest side of the `response-stream` resource.
    pub struct StreamHandle(pub RefCell<Box<dyn EventStream>>);

    impl StreamHandle {
        /// Pull the next batch from the author's stream.
        pub fn next(&self) -> Result<Option<Vec<StreamEvent>>, ExtError> {
            self.0.borrow_mut().next().map_err(Into::into)
        }
    }

    /// The provider's models, as declared.
    pub fn models<T: Provider>(inst: &Instance<T>) -> Vec<ModelInfo> {
        inst.with(|p| p.models())
    }

    /// Start a response and wrap its stream for the resource.
    pub fn send<T: Provider>(
        inst: &Instance<T>,
        req: ProviderRequest,
    ) -> Result<StreamHandle, ExtError> {
        let stream = inst.with(|p| p.send(req))?;
        Ok(StreamHandle(RefCell::new(stream)))
    }
}
