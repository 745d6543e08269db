//! `scripted`: a deterministic provider that plays a script of assistant
//! turns. Each request consumes the next turn, so a tool-call turn followed
//! by a text turn makes one continuation round. Used by tests and the
//! offline demo.

mod script;

use script::{Script, Turn};
use stud_sdk::kinds::provider::{FinishReason, ToolCallDelta, ToolCallStart, VecStream};
use stud_sdk::models_from_config;
use stud_sdk::prelude::*;
use stud_sdk::wit::stud::extension::provider_types::ThinkingDelta;

#[derive(Default)]
struct Scripted {
    script: Script,
    model: String,
    context_window: u32,
    models: Vec<ModelInfo>,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Progress {
    next: usize,
    /// Turns played per lane.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    lanes: std::collections::BTreeMap<String, usize>,
}

impl Provider for Scripted {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.model = config
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("scripted")
            .to_string();
        self.context_window = config
            .get("context-window")
            .and_then(Value::as_u64)
            .map(|w| w.min(u64::from(u32::MAX)) as u32)
            .unwrap_or(200_000);
        let capabilities = ModelCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            vision: true,
            thinking: true,
            prompt_caching: false,
            context_window: self.context_window,
            max_output: 32_000,
        };
        // `models` describes more (or other) models, for switch tests.
        self.models = models_from_config(
            config,
            vec![ModelInfo {
                id: self.model.clone(),
                capabilities,
            }],
            &capabilities,
        )?;
        self.script = if let Some(inline) = config.get("script") {
            Script::from_value(inline.clone())?
        } else if let Some(file) = config.get("script-file").and_then(Value::as_str) {
            Script::from_file(file)?
        } else {
            Script::demo()
        };
        Ok(())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.models.clone()
    }

    fn send(&mut self, request: ProviderRequest) -> Result<Box<dyn EventStream>, Error> {
        let mut progress: Progress = host::state::read()?.unwrap_or_default();
        let (turn, index) = match self.script.lane_for(request.system.as_deref()) {
            Some((key, lane)) => {
                let index = progress.lanes.get(key).copied().unwrap_or(0);
                let turn = lane.turn(index).ok_or_else(|| {
                    Error::validation(
                        "script-exhausted",
                        format!(
                            "lane `{key}` of the script has {} turns and all were played",
                            lane.turns.len()
                        ),
                    )
                })?;
                progress.lanes.insert(key.to_string(), index + 1);
                (turn, index)
            }
            None => {
                let index = progress.next;
                let turn = self.script.turn(index).ok_or_else(|| {
                    Error::validation(
                        "script-exhausted",
                        format!(
                            "the script has {} turns and all were played; add turns or set \"repeat\": true",
                            self.script.turns.len()
                        ),
                    )
                })?;
                progress.next = index + 1;
                (turn, index)
            }
        };
        host::state::write(&progress)?;
        if turn.sleep_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(turn.sleep_ms));
        }
        if let Some(err) = &turn.error {
            return Err(err.to_error());
        }
        Ok(Box::new(VecStream::new(self.events(turn, &request, index))))
    }
}

impl Scripted {
    fn events(
        &self,
        turn: &Turn,
        request: &ProviderRequest,
        index: usize,
    ) -> Vec<Vec<StreamEvent>> {
        let chunk = self.script.chunk.max(1);
        let mut batches = Vec::new();
        if let Some(thinking) = &turn.thinking {
            for piece in split(thinking, chunk) {
                batches.push(vec![StreamEvent::ThinkingDelta(ThinkingDelta {
                    text: piece,
                    signature: None,
                })]);
            }
        }
        let text = script::render(&turn.text, request);
        for piece in split(&text, chunk) {
            batches.push(vec![StreamEvent::TextDelta(piece)]);
        }
        for (i, call) in turn.tool_calls.iter().enumerate() {
            let index32 = i as u32;
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{index}_{i}"));
            batches.push(vec![StreamEvent::ToolCallStart(ToolCallStart {
                index: index32,
                id,
                name: call.name.clone(),
            })]);
            let arguments = render_strings(&call.arguments, request);
            for piece in split(&arguments.to_string(), chunk) {
                batches.push(vec![StreamEvent::ToolCallDelta(ToolCallDelta {
                    index: index32,
                    arguments: piece,
                })]);
            }
            batches.push(vec![StreamEvent::ToolCallEnd(index32)]);
        }
        let finish = match turn.finish.as_deref() {
            Some("length") => FinishReason::Length,
            Some("content-filter") => FinishReason::ContentFilter,
            Some("error") => FinishReason::Error,
            _ if !turn.tool_calls.is_empty() => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
        batches.push(vec![
            StreamEvent::Usage(Usage {
                input_tokens: script::estimate_tokens(request),
                output_tokens: (text.len() as u64).div_ceil(4),
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            }),
            StreamEvent::Finish(finish),
        ]);
        batches
    }
}

/// The arguments with placeholders filled in their string values.
fn render_strings(value: &Value, request: &ProviderRequest) -> Value {
    match value {
        Value::String(t) => Value::String(script::render(t, request)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| render_strings(v, request)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render_strings(v, request)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Split on character boundaries into pieces of at most `n` chars.
fn split(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

stud_sdk::export_provider!(Scripted);
