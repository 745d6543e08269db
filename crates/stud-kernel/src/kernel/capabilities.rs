//! Capability negotiation: what a request needs from the model (tool
//! calling for tools, vision for images) checked against what the provider
//! declares for that model, before anything is sent. A switch to a model
//! that cannot serve the session is refused and the old model stays.

use std::fmt;

use crate::runtime::domain::{ContentPart, ResultPart};
use crate::runtime::domain::{ModelCapabilities, Request, ThinkingLevel};

/// A model capability a request can need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    ToolCalling,
    Vision,
    Thinking,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Capability::ToolCalling => "tool calling",
            Capability::Vision => "vision (image input)",
            Capability::Thinking => "thinking",
        })
    }
}

/// `ProviderCapability/MissingCapability`: the model cannot serve this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "model `{model}` of provider `{provider}` does not support {capability}, which {needed_by} needs; {fix}"
)]
pub struct MissingCapability {
    pub provider: String,
    pub model: String,
    pub capability: Capability,
    pub needed_by: String,
    pub fix: String,
}

impl MissingCapability {
    /// The machine-readable code (`missing-capability`).
    pub const CODE: &'static str = "missing-capability";
}

/// What the session as a whole needs, whatever the turn: tool calling when
/// any tool is loaded.
pub fn check_session(
    provider: &str,
    model: &str,
    caps: &ModelCapabilities,
    tool_count: usize,
) -> Result<(), MissingCapability> {
    if tool_count > 0 && !caps.tool_calling {
        return Err(MissingCapability {
            provider: provider.into(),
            model: model.into(),
            capability: Capability::ToolCalling,
            needed_by: format!("this session ({tool_count} tools loaded)"),
            fix: "pick a model with tool calling (--model or /model), or run without tools (`--no-tools`)".into(),
        });
    }
    Ok(())
}

/// What one request needs.
pub fn check_request(
    provider: &str,
    model: &str,
    caps: &ModelCapabilities,
    request: &Request,
) -> Result<(), MissingCapability> {
    let missing = |capability, needed_by: &str, fix: &str| MissingCapability {
        provider: provider.into(),
        model: model.into(),
        capability,
        needed_by: needed_by.into(),
        fix: fix.into(),
    };
    if !request.tools.is_empty() && !caps.tool_calling {
        return Err(missing(
            Capability::ToolCalling,
            "a request with tool definitions",
            "pick a model with tool calling (--model or /model), or run without tools (`--no-tools`)",
        ));
    }
    if !caps.vision && has_image(request) {
        return Err(missing(
            Capability::Vision,
            "a conversation with images",
            "pick a model with vision (--model or /model), or leave the image out",
        ));
    }
    if request.params.thinking != ThinkingLevel::Off && !caps.thinking {
        return Err(missing(
            Capability::Thinking,
            "`active.thinking` in settings",
            "set `active.thinking` to \"off\" or pick a model with thinking",
        ));
    }
    Ok(())
}

/// A model without vision still gets a tool's answer when it holds an
/// image (a `read` of a PNG, an MCP screenshot): the image is left out
/// with a note instead of the whole request being refused. Images the
/// person attached are refused earlier, with a message.
pub fn leave_out_result_images(request: &mut Request) {
    for m in &mut request.messages {
        for part in &mut m.content {
            if let ContentPart::ToolResult(r) = part {
                for c in &mut r.content {
                    if let ResultPart::Image(i) = c {
                        *c = ResultPart::Text(format!(
                            "[{} image left out: this model has no vision]",
                            i.media_type
                        ));
                    }
                }
            }
        }
    }
}

fn has_image(request: &Request) -> bool {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .any(|p| match p {
            ContentPart::Image(_) => true,
            ContentPart::ToolResult(r) => {
                r.content.iter().any(|c| matches!(c, ResultPart::Image(_)))
            }
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::domain::{Image, ImageSource, Message, Role};
    use crate::runtime::domain::{RequestParams, ToolDefinition};

    fn caps(tool_calling: bool, vision: bool) -> ModelCapabilities {
        ModelCapabilities {
            streaming: true,
            tool_calling,
            parallel_tool_calls: false,
            vision,
            thinking: false,
            prompt_caching: false,
            context_window: 8192,
            max_output: 1024,
        }
    }

    fn request(tools: bool, image: bool) -> Request {
        let mut content = vec![ContentPart::Text("hi".into())];
        if image {
            content.push(ContentPart::Image(Image {
                media_type: "image/png".into(),
                source: ImageSource::Base64("AAAA".into()),
            }));
        }
        Request {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content,
            }],
            tools: if tools {
                vec![ToolDefinition {
                    name: "read".into(),
                    description: String::new(),
                    parameters: "{}".into(),
                }]
            } else {
                vec![]
            },
            params: RequestParams {
                model: "m".into(),
                max_tokens: None,
                temperature: None,
                thinking: ThinkingLevel::Off,
                cache_hints: false,
            },
        }
    }

    #[test]
    fn names_the_capability_and_model() {
        let err =
            check_request("p", "small", &caps(false, true), &request(true, false)).unwrap_err();
        assert_eq!(err.capability, Capability::ToolCalling);
        let text = err.to_string();
        assert!(
            text.contains("`small`") && text.contains("tool calling"),
            "{text}"
        );
        let err = check_request("p", "m", &caps(true, false), &request(false, true)).unwrap_err();
        assert_eq!(err.capability, Capability::Vision);
        assert!(check_request("p", "m", &caps(true, true), &request(true, true)).is_ok());
        assert!(check_session("p", "m", &caps(false, false), 0).is_ok());
        assert!(check_session("p", "m", &caps(false, false), 3).is_err());
    }
}
