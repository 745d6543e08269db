//! `openai-responses`: OpenAI's Responses API (`POST /v1/responses`), the
//! one OpenAI's newest coding models are served through and Codex speaks.
//! The request is built in [`request`] (the history as input items), the
//! typed SSE events are turned into stream events in [`stream`].
//!
//! Stateless by default (`store: false`): reasoning items come back with
//! their encrypted content and are sent back with the next request, so
//! nothing is kept on OpenAI's side. A reasoning item travels through the
//! kernel as a thinking block: its summary is the text, the item itself
//! (id and encrypted content) the block's opaque signature.
//!
//! Azure: a `baseUrl` on `*.openai.azure.com` sends the key as `api-key`
//! (override with `authHeader`), and `apiVersion` adds `?api-version=`.

mod request;
mod stream;

use stud_sdk::kinds::provider::{ModelConfig, models_from_config};
use stud_sdk::llm_http::{header, post_json};
use stud_sdk::prelude::*;
use stud_sdk::sse::SseEvents;

const DEFAULT_BASE: &str = "https://api.openai.com/v1";
const SECRET: &str = "OPENAI_API_KEY";

/// What the config decides about each request.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep responses on OpenAI's side (`store: true`): reasoning items
    /// are then sent back by id, without their encrypted content.
    pub store: bool,
    /// `reasoning.summary`; `None` asks for no summary.
    pub summary: Option<String>,
}

#[derive(Default)]
struct Responses {
    url: String,
    auth_header: String,
    models: Vec<ModelInfo>,
    options: Options,
    require_key: bool,
    extra_headers: Vec<(String, String)>,
}

fn defaults() -> ModelCapabilities {
    ModelCapabilities {
        streaming: true,
        tool_calling: true,
        parallel_tool_calls: true,
        vision: true,
        thinking: true,
        prompt_caching: true,
        context_window: 400_000,
        max_output: 128_000,
    }
}

fn builtin() -> Vec<ModelInfo> {
    let m = |id: &str, thinking, context_window, max_output| {
        ModelConfig {
            thinking: Some(thinking),
            context_window: Some(context_window),
            max_output: Some(max_output),
            ..ModelConfig::named(id)
        }
        .into_info(&defaults())
    };
    vec![
        m("gpt-5-codex", true, 400_000, 128_000),
        m("gpt-5", true, 400_000, 128_000),
        m("gpt-5-mini", true, 400_000, 128_000),
        m("o4-mini", true, 200_000, 100_000),
        m("gpt-4.1", false, 1_047_576, 32_768),
    ]
}

impl Provider for Responses {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let s = |k: &str| config.get(k).and_then(Value::as_str);
        let base = s("baseUrl")
            .unwrap_or(DEFAULT_BASE)
            .trim_end_matches('/')
            .to_string();
        self.url = match s("apiVersion") {
            Some(v) => format!("{base}/responses?api-version={v}"),
            None => format!("{base}/responses"),
        };
        let azure = base
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ':']).next())
            .is_some_and(|host| host.ends_with(".openai.azure.com"));
        self.auth_header = s("authHeader")
            .unwrap_or(if azure { "api-key" } else { "authorization" })
            .to_string();
        self.models = models_from_config(config, builtin(), &defaults())?;
        self.options = Options {
            store: config
                .get("store")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            summary: match s("reasoningSummary").unwrap_or("auto") {
                "none" => None,
                other => Some(other.to_string()),
            },
        };
        self.require_key = config
            .get("requireKey")
            .and_then(Value::as_bool)
            .unwrap_or(base == DEFAULT_BASE || azure);
        self.extra_headers = stud_sdk::llm_parts::config_headers(config);
        Ok(())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.models.clone()
    }

    fn send(&mut self, req: ProviderRequest) -> Result<Box<dyn EventStream>, Error> {
        let mut headers: Vec<_> = self
            .extra_headers
            .iter()
            .map(|(k, v)| header(k, v))
            .collect();
        match host::secret(SECRET) {
            Ok(key) if self.auth_header == "api-key" => headers.push(header("api-key", &key)),
            Ok(key) => headers.push(header("authorization", &format!("Bearer {key}"))),
            Err(e) if self.require_key => return Err(e),
            Err(_) => {}
        }
        headers.push(header("accept", "text/event-stream"));
        // Reasoning models get their reasoning items' encrypted content
        // (to pass back) and the reasoning settings; others would refuse
        // them. A model the config does not know is taken as one without.
        let reasons = self
            .models
            .iter()
            .find(|m| m.id == req.params.model)
            .is_some_and(|m| m.capabilities.thinking);
        let body = request::body(&req, &self.options, reasons)?;
        let key_hint =
            format!("check {SECRET} (or `secrets.openai-responses.{SECRET}` in settings.json)");
        let response = post_json(&self.url, headers, &body, &key_hint)?;
        Ok(Box::new(SseEvents::new(
            response,
            stream::ResponsesDecoder::default(),
        )))
    }
}

stud_sdk::export_provider!(Responses);
