//! `anthropic`: the Messages API with streaming. [`request`] builds the
//! body (alternating roles, tool results as user blocks, thinking blocks
//! sent back with their signatures, cache breakpoints); [`stream`] turns
//! the typed SSE events into stream events.

mod request;
mod stream;

use stud_sdk::kinds::provider::{ModelConfig, models_from_config};
use stud_sdk::llm_http::{header, post_json};
use stud_sdk::prelude::*;
use stud_sdk::sse::SseEvents;

const DEFAULT_BASE: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
const SECRET: &str = "ANTHROPIC_API_KEY";
/// Marks a thinking part that carries a `redacted_thinking` block's data in
/// its (provider-opaque) signature.
const REDACTED_THINKING: &str = "redacted_thinking:";

#[derive(Default)]
struct Anthropic {
    base: String,
    version: String,
    default_max_tokens: u32,
    models: Vec<ModelInfo>,
}

fn defaults() -> ModelCapabilities {
    ModelCapabilities {
        streaming: true,
        tool_calling: true,
        parallel_tool_calls: true,
        vision: true,
        thinking: true,
        prompt_caching: true,
        context_window: 200_000,
        max_output: 64_000,
    }
}

fn builtin() -> Vec<ModelInfo> {
    let m = |id: &str, max_output| {
        ModelConfig {
            max_output: Some(max_output),
            ..ModelConfig::named(id)
        }
        .into_info(&defaults())
    };
    vec![
        m("claude-sonnet-4-5", 64_000),
        m("claude-opus-4-1", 32_000),
        m("claude-haiku-4-5", 64_000),
    ]
}

impl Provider for Anthropic {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let s = |k: &str| config.get(k).and_then(Value::as_str);
        self.base = s("baseUrl")
            .unwrap_or(DEFAULT_BASE)
            .trim_end_matches('/')
            .to_string();
        self.version = s("version").unwrap_or(API_VERSION).to_string();
        self.default_max_tokens = config
            .get("defaultMaxTokens")
            .and_then(Value::as_u64)
            .unwrap_or(8192) as u32;
        self.models = models_from_config(config, builtin(), &defaults())?;
        Ok(())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.models.clone()
    }

    fn send(&mut self, req: ProviderRequest) -> Result<Box<dyn EventStream>, Error> {
        let key = host::secret(SECRET)?;
        let max_output = self
            .models
            .iter()
            .find(|m| m.id == req.params.model)
            .map(|m| m.capabilities.max_output)
            .unwrap_or(self.default_max_tokens);
        let max_tokens = req
            .params
            .max_tokens
            .unwrap_or(self.default_max_tokens)
            .min(max_output.max(1));
        let body = request::body(&req, max_tokens)?;
        let headers = vec![
            header("x-api-key", &key),
            header("anthropic-version", &self.version),
            header("accept", "text/event-stream"),
        ];
        let key_hint = format!("check {SECRET} (or `secrets.anthropic.{SECRET}` in settings.json)");
        let url = format!("{}/v1/messages", self.base);
        let response = post_json(&url, headers, &body, &key_hint)?;
        Ok(Box::new(SseEvents::new(
            response,
            stream::MessageDecoder::default(),
        )))
    }
}

stud_sdk::export_provider!(Anthropic);
