//! `gemini`: `models/{model}:streamGenerateContent?alt=sse`. The key goes
//! in the `x-goog-api-key` header, never the URL, so it cannot end up in a
//! logged address. [`request`] builds `contents`; [`stream`] maps each
//! streamed `GenerateContentResponse`.

mod request;
mod stream;

use stud_sdk::kinds::provider::{ModelConfig, models_from_config};
use stud_sdk::llm_http::{header, post_json};
use stud_sdk::prelude::*;
use stud_sdk::sse::SseEvents;

const DEFAULT_BASE: &str = "https://generativelanguage.googleapis.com/v1beta";
const SECRET: &str = "GEMINI_API_KEY";

#[derive(Default)]
struct Gemini {
    base: String,
    models: Vec<ModelInfo>,
}

fn defaults() -> ModelCapabilities {
    ModelCapabilities {
        streaming: true,
        tool_calling: true,
        parallel_tool_calls: true,
        vision: true,
        thinking: true,
        prompt_caching: false,
        context_window: 1_048_576,
        max_output: 65_536,
    }
}

fn builtin() -> Vec<ModelInfo> {
    let m = |id: &str| ModelConfig::named(id).into_info(&defaults());
    vec![
        m("gemini-2.5-pro"),
        m("gemini-2.5-flash"),
        m("gemini-2.5-flash-lite"),
    ]
}

impl Provider for Gemini {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.base = config
            .get("baseUrl")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_BASE)
            .trim_end_matches('/')
            .to_string();
        self.models = models_from_config(config, builtin(), &defaults())?;
        Ok(())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.models.clone()
    }

    fn send(&mut self, req: ProviderRequest) -> Result<Box<dyn EventStream>, Error> {
        let key = host::secret(SECRET)?;
        let body = request::body(&req)?;
        let url = format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            self.base, req.params.model
        );
        let headers = vec![
            header("x-goog-api-key", &key),
            header("accept", "text/event-stream"),
        ];
        let key_hint = format!("check {SECRET} (or `secrets.gemini.{SECRET}` in settings.json)");
        let response = post_json(&url, headers, &body, &key_hint)?;
        Ok(Box::new(SseEvents::new(
            response,
            stream::GeminiDecoder::default(),
        )))
    }
}

stud_sdk::export_provider!(Gemini);
