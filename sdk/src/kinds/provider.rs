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

    /// The extension is being retired: a reload replaced it, or the
    /// session ended. Release what `init` took; `dispose` follows. Bounded
    /// by the call deadline; an error is logged, not shown.
    fn deactivate(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The last call before the instance is dropped (after `deactivate`).
    fn dispose(&mut self) {}

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

/// A model as written in a provider's config (`"models": [...]`), so users
/// can describe models the provider does not know (a local server, a new
/// release). Unset capabilities come from the defaults the provider gives.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelConfig {
    /// The model id sent to the API.
    pub id: String,
    #[allow(missing_docs)]
    pub streaming: Option<bool>,
    #[allow(missing_docs)]
    pub tool_calling: Option<bool>,
    #[allow(missing_docs)]
    pub parallel_tool_calls: Option<bool>,
    #[allow(missing_docs)]
    pub vision: Option<bool>,
    #[allow(missing_docs)]
    pub thinking: Option<bool>,
    #[allow(missing_docs)]
    pub prompt_caching: Option<bool>,
    #[allow(missing_docs)]
    pub context_window: Option<u32>,
    #[allow(missing_docs)]
    pub max_output: Option<u32>,
}

impl ModelConfig {
    /// A model with every capability left to the defaults.
    pub fn named(id: &str) -> Self {
        ModelConfig {
            id: id.to_string(),
            ..Default::default()
        }
    }

    /// The declared model, unset capabilities taken from `defaults`.
    pub fn into_info(self, defaults: &ModelCapabilities) -> ModelInfo {
        let d = defaults;
        ModelInfo {
            id: self.id,
            capabilities: ModelCapabilities {
                streaming: self.streaming.unwrap_or(d.streaming),
                tool_calling: self.tool_calling.unwrap_or(d.tool_calling),
                parallel_tool_calls: self.parallel_tool_calls.unwrap_or(d.parallel_tool_calls),
                vision: self.vision.unwrap_or(d.vision),
                thinking: self.thinking.unwrap_or(d.thinking),
                prompt_caching: self.prompt_caching.unwrap_or(d.prompt_caching),
                context_window: self.context_window.unwrap_or(d.context_window),
                max_output: self.max_output.unwrap_or(d.max_output),
            },
        }
    }
}

/// Models from config `models` when given, else `builtin`; each config
/// entry replaces a built-in model of the same id.
pub fn models_from_config(
    config: &Value,
    builtin: Vec<ModelInfo>,
    defaults: &ModelCapabilities,
) -> Result<Vec<ModelInfo>, Error> {
    let Some(list) = config.get("models") else {
        return Ok(builtin);
    };
    let entries: Vec<ModelConfig> = serde_json::from_value(list.clone())
        .map_err(|e| Error::validation("config-invalid", format!("config `models`: {e}")))?;
    Ok(entries
        .into_iter()
        .map(|m| {
            let base = builtin
                .iter()
                .find(|b| b.id == m.id)
                .map(|b| b.capabilities)
                .unwrap_or(*defaults);
            m.into_info(&base)
        })
        .collect())
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
