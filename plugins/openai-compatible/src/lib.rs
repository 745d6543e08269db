//! `openai-compatible`: the Chat Completions streaming protocol, for OpenAI
//! and the many servers that copy it. The request is built in
//! [`request`], the SSE answer is turned into stream events in
//! [`stream`]. Servers differ in small ways; the config's compat settings
//! (`maxTokensField`, `systemRole`, `includeUsage`) cover the common ones.

mod request;
mod stream;

use stud_sdk::kinds::provider::{ModelConfig, models_from_config};
use stud_sdk::llm_http::{header, post_json};
use stud_sdk::prelude::*;
use stud_sdk::sse::SseEvents;

const DEFAULT_BASE: &str = "https://api.openai.com/v1";
const SECRET: &str = "OPENAI_API_KEY";

/// Compat settings, from config.
#[derive(Debug, Clone)]
pub struct Compat {
    pub max_tokens_field: String,
    pub system_role: String,
    pub include_usage: bool,
}

#[derive(Default)]
struct OpenAi {
    base: String,
    models: Vec<ModelInfo>,
    compat: Option<Compat>,
    require_key: bool,
    extra_headers: Vec<(String, String)>,
}

fn defaults() -> ModelCapabilities {
    ModelCapabilities {
        streaming: true,
        tool_calling: true,
        parallel_tool_calls: true,
        vision: false,
        thinking: false,
        prompt_caching: false,
        context_window: 32_768,
        max_output: 4096,
    }
}

fn builtin() -> Vec<ModelInfo> {
    let m = |id: &str, vision, thinking, context_window, max_output| {
        ModelConfig {
            vision: Some(vision),
            thinking: Some(thinking),
            prompt_caching: Some(true),
            context_window: Some(context_window),
            max_output: Some(max_output),
            ..ModelConfig::named(id)
        }
        .into_info(&defaults())
    };
    vec![
        m("gpt-4.1", true, false, 1_047_576, 32_768),
        m("gpt-4.1-mini", true, false, 1_047_576, 32_768),
        m("gpt-4o", true, false, 128_000, 16_384),
        m("gpt-4o-mini", true, false, 128_000, 16_384),
        m("o4-mini", true, true, 200_000, 100_000),
    ]
}

impl Provider for OpenAi {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let s = |k: &str| config.get(k).and_then(Value::as_str);
        self.base = s("baseUrl")
            .unwrap_or(DEFAULT_BASE)
            .trim_end_matches('/')
            .to_string();
        self.models = models_from_config(config, builtin(), &defaults())?;
        self.compat = Some(Compat {
            max_tokens_field: s("maxTokensField").unwrap_or("max_tokens").to_string(),
            system_role: s("systemRole").unwrap_or("system").to_string(),
            include_usage: config
                .get("includeUsage")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        });
        // A local server usually needs no key; OpenAI itself always does.
        self.require_key = config
            .get("requireKey")
            .and_then(Value::as_bool)
            .unwrap_or(self.base == DEFAULT_BASE);
        self.extra_headers = stud_sdk::llm_parts::config_headers(config);
        Ok(())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.models.clone()
    }

    fn send(&mut self, req: ProviderRequest) -> Result<Box<dyn EventStream>, Error> {
        let compat = self
            .compat
            .clone()
            .ok_or_else(|| Error::internal("not initialised"))?;
        let mut headers: Vec<_> = self
            .extra_headers
            .iter()
            .map(|(k, v)| header(k, v))
            .collect();
        match host::secret(SECRET) {
            Ok(key) => headers.push(header("authorization", &format!("Bearer {key}"))),
            Err(e) if self.require_key => return Err(e),
            Err(_) => {}
        }
        headers.push(header("accept", "text/event-stream"));
        let body = request::body(&req, &compat)?;
        let url = format!("{}/chat/completions", self.base);
        let key_hint =
            format!("check {SECRET} (or `secrets.openai-compatible.{SECRET}` in settings.json)");
        let response = post_json(&url, headers, &body, &key_hint)?;
        Ok(Box::new(SseEvents::new(
            response,
            stream::ChatDecoder::default(),
        )))
    }
}

stud_sdk::export_provider!(OpenAi);
