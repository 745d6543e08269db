//! The script format and its placeholders.

use serde::Deserialize;
use stud_sdk::prelude::*;

/// `{"turns": [...], "repeat": false, "chunk": 8}`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<Turn>,
    /// Start again from the first turn when all were played.
    #[serde(default)]
    pub repeat: bool,
    /// Characters per streamed delta.
    #[serde(default = "default_chunk")]
    pub chunk: usize,
    /// Scripts of their own for requests whose system prompt contains the
    /// key (one per workflow stage, say), each played from its own start,
    /// so requests that run at the same time get their own answers.
    #[serde(default)]
    pub lanes: std::collections::BTreeMap<String, Lane>,
}

/// `{"turns": [...], "repeat": false}` for one lane.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Lane {
    pub turns: Vec<Turn>,
    #[serde(default)]
    pub repeat: bool,
}

impl Lane {
    pub fn turn(&self, index: usize) -> Option<&Turn> {
        pick(&self.turns, self.repeat, index)
    }
}

fn pick(turns: &[Turn], repeat: bool, index: usize) -> Option<&Turn> {
    if turns.is_empty() {
        return None;
    }
    if repeat {
        turns.get(index % turns.len())
    } else {
        turns.get(index)
    }
}

fn default_chunk() -> usize {
    8
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Assistant text; `{{tool_results}}`, `{{last_user}}`, `{{system}}`
    /// (the request's system prompt), `{{messages}}` (how many messages
    /// the request carried) and `{{images}}` (the images the person sent)
    /// are replaced.
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Fail the request instead of answering.
    #[serde(default)]
    pub error: Option<ScriptedError>,
    /// Wait before answering (tests of cancellation and timeouts).
    #[serde(default)]
    pub sleep_ms: u64,
    #[serde(default)]
    pub finish: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    json!({})
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    #[serde(default = "default_class")]
    pub class: String,
    pub code: String,
    pub message: String,
}

fn default_class() -> String {
    "provider-transient".into()
}

impl ScriptedError {
    pub fn to_error(&self) -> Error {
        let class = match self.class.as_str() {
            "validation" => ErrorClass::Validation,
            "provider-capability" => ErrorClass::ProviderCapability,
            "session" => ErrorClass::Session,
            "extension-host" => ErrorClass::ExtensionHost,
            _ => ErrorClass::ProviderTransient,
        };
        Error::new(class, &self.code, self.message.clone())
    }
}

impl Script {
    pub fn from_value(value: Value) -> Result<Self, Error> {
        serde_json::from_value(value).map_err(|e| {
            Error::validation("script-invalid", format!("the script does not parse: {e}"))
        })
    }

    /// A JSON script file, relative to the project directory.
    pub fn from_file(path: &str) -> Result<Self, Error> {
        let full = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/project/{path}")
        };
        let unreadable = |why: String| {
            Error::validation(
                "script-unreadable",
                format!("cannot read script file `{path}`: {why}"),
            )
        };
        let text = stud_sdk::fs::read_to_string(&full, path)
            .map_err(|e| unreadable(e.to_string()))?
            .ok_or_else(|| unreadable("it does not exist".into()))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            Error::validation(
                "script-invalid",
                format!("script file `{path}` is not JSON: {e}"),
            )
        })?;
        Self::from_value(value)
    }

    /// The offline demo: list the project, then report what was found.
    pub fn demo() -> Self {
        Script {
            turns: vec![
                Turn {
                    text: "I'll look at the files in this project.".into(),
                    tool_calls: vec![ScriptedCall {
                        id: None,
                        name: "list".into(),
                        arguments: json!({"path": "."}),
                    }],
                    ..Turn::default()
                },
                Turn {
                    text: "Here is what the project contains:\n{{tool_results}}".into(),
                    ..Turn::default()
                },
            ],
            repeat: true,
            chunk: default_chunk(),
            lanes: Default::default(),
        }
    }

    pub fn turn(&self, index: usize) -> Option<&Turn> {
        pick(&self.turns, self.repeat, index)
    }

    /// The lane a request belongs to: the first key its system prompt
    /// contains.
    pub fn lane_for(&self, system: Option<&str>) -> Option<(&str, &Lane)> {
        let system = system?;
        self.lanes
            .iter()
            .find(|(k, _)| system.contains(k.as_str()))
            .map(|(k, l)| (k.as_str(), l))
    }
}

/// Replace placeholders with text from the request.
pub fn render(template: &str, request: &ProviderRequest) -> String {
    if !template.contains("{{") {
        return template.to_string();
    }
    let last_user = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(message_text)
        .unwrap_or_default();
    let mut results = Vec::new();
    for message in request.messages.iter().rev() {
        if message.role == Role::User {
            break;
        }
        for part in message.content.iter().rev() {
            if let ContentPart::ToolResult(r) = part {
                let text: Vec<&str> = r
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ResultPart::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                results.push(text.join("\n"));
            }
        }
    }
    results.reverse();
    // The images the person sent in the request (media type and size).
    let images: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            ContentPart::Image(i) => Some(match &i.source {
                ImageSource::Base64(b) => format!("{} ({} base64 chars)", i.media_type, b.len()),
                ImageSource::Url(u) => format!("{} at {u}", i.media_type),
            }),
            _ => None,
        })
        .collect();
    template
        .replace("{{images}}", &images.join(", "))
        .replace("{{last_user}}", &last_user)
        .replace("{{tool_results}}", &results.join("\n"))
        .replace("{{system}}", request.system.as_deref().unwrap_or_default())
        .replace("{{messages}}", &request.messages.len().to_string())
}

fn message_text(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// About four characters per token, over everything sent.
pub fn estimate_tokens(request: &ProviderRequest) -> u64 {
    let mut chars = request.system.as_ref().map_or(0, |s| s.len());
    for m in &request.messages {
        for p in &m.content {
            chars += match p {
                ContentPart::Text(t) => t.len(),
                ContentPart::ToolCall(c) => c.arguments.len() + c.name.len(),
                ContentPart::ToolResult(r) => r
                    .content
                    .iter()
                    .map(|p| match p {
                        ResultPart::Text(t) => t.len(),
                        _ => 1000,
                    })
                    .sum(),
                ContentPart::Thinking(t) => t.text.len(),
                ContentPart::Image(_) => 1000,
            };
        }
    }
    (chars as u64).div_ceil(4)
}
