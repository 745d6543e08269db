//! An MCP server's tool as one of the session's tools, named
//! `mcp__<server>__<tool>` (the convention users know). A server id never
//! holds `__`, so the name says which server it is: the server part ends
//! at the first `__` after `mcp__`, and a tool's own `__` (`x__y`) stays
//! in the tool part. Its schema is
//! offered to the model and checked by the kernel like any tool's; its
//! approval key is the arguments as compact JSON (one line), so allowlist
//! patterns work on it (`mcp__github__*` for every tool of a server);
//! its result parts (text, images, embedded resources) come back as the
//! model-facing parts stud's own tools return, and the tool layer
//! size-limits them as it does for every tool.

use std::sync::Arc;

use serde_json::Value;

use super::link::McpLink;

/// Providers accept tool names of at most 64 of `[A-Za-z0-9_-]`.
const MAX_NAME: usize = 64;

/// The name prefix reserved for MCP tools (`mcp__<server>__<tool>`).
pub const MCP_PREFIX: &str = "mcp__";

/// The session-wide name of `tool` of `server`; `None` when it would be
/// longer than providers accept. Other characters become `_`.
pub fn tool_name(server: &str, tool: &str) -> Option<String> {
    let clean = clean_name(tool);
    let name = format!("{MCP_PREFIX}{server}__{clean}");
    (name.len() <= MAX_NAME && !clean.is_empty()).then_some(name)
}

/// A server's name for a tool or prompt in the characters providers and
/// command names accept (`[A-Za-z0-9_-]`; others become `_`).
pub fn clean_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What came back from a call, in stud's terms.
pub enum McpOutcome {
    /// Parts for the model (text, or an image as media type and base64).
    Ok(Vec<McpPart>),
    /// The server said the call failed (`isError`), with its text.
    ToolError(String),
    /// The call did not complete (the connection, the protocol).
    Failed(String),
}

pub enum McpPart {
    Text(String),
    Image { media_type: String, base64: String },
}

pub struct McpTool {
    pub server: String,
    /// The tool's name on its server.
    pub remote: String,
    /// Its name in the session after `mcp__<server>__` ([`clean_name`] of
    /// `remote`): what allowlist entries match, together with `server`.
    pub name: String,
    link: Arc<McpLink>,
}

impl McpTool {
    /// Whether a project (its `.mcp.json` or settings) brought the server.
    pub fn from_project(&self) -> bool {
        matches!(
            self.link.server().scope,
            super::config::McpScope::Project(_)
        )
    }

    pub fn new(remote: &str, link: Arc<McpLink>) -> Self {
        McpTool {
            server: link.id().to_string(),
            remote: remote.to_string(),
            name: clean_name(remote),
            link,
        }
    }

    /// The arguments as compact JSON: one line (JSON escapes line breaks),
    /// so a key is never split or spoofed across lines.
    pub fn approval_key(&self, arguments: &str) -> String {
        serde_json::from_str::<Value>(arguments)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| arguments.replace(['\n', '\r'], " "))
    }

    pub async fn run(&self, arguments: &str) -> McpOutcome {
        let args: Value = match serde_json::from_str(arguments) {
            Ok(v) => v,
            Err(e) => return McpOutcome::Failed(format!("arguments are not JSON: {e}")),
        };
        let result = match self.link.call(&self.remote, args).await {
            Ok(r) => r,
            Err(e) => return McpOutcome::Failed(e.to_string()),
        };
        // The wire form of content blocks is MCP's stable schema; reading
        // it, rather than the SDK's Rust types, keeps this independent of
        // how the SDK models them.
        let blocks = serde_json::to_value(&result.content).unwrap_or(Value::Null);
        let parts = parts_of(&blocks, &self.server);
        if result.is_error == Some(true) {
            let text: Vec<String> = parts
                .into_iter()
                .filter_map(|p| match p {
                    McpPart::Text(t) => Some(t),
                    McpPart::Image { .. } => None,
                })
                .collect();
            return McpOutcome::ToolError(text.join("\n"));
        }
        McpOutcome::Ok(parts)
    }
}

/// Content blocks as parts: text as is; images as images; an embedded
/// text resource as its text under a line naming its URI; anything else
/// (binary resources, audio, resource links) as a line saying what it was.
fn parts_of(blocks: &Value, server: &str) -> Vec<McpPart> {
    let mut out = Vec::new();
    for b in blocks.as_array().into_iter().flatten() {
        let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
        let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match kind {
            "text" => out.push(McpPart::Text(s("text"))),
            "image" => out.push(McpPart::Image {
                media_type: s("mimeType"),
                base64: s("data"),
            }),
            "resource" => {
                let r = b.get("resource").cloned().unwrap_or(Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => out.push(McpPart::Text(format!("[resource {uri}]\n{text}"))),
                    None => out.push(McpPart::Text(format!(
                        "[binary resource {uri} from MCP server `{server}`, {} not shown]",
                        r.get("mimeType").and_then(Value::as_str).unwrap_or("data")
                    ))),
                }
            }
            "resource_link" => out.push(McpPart::Text(format!(
                "[resource link {} ({})]",
                s("uri"),
                s("name")
            ))),
            other => out.push(McpPart::Text(format!(
                "[{other} content from MCP server `{server}`, not shown]"
            ))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_convention_and_the_provider_limit() {
        assert_eq!(
            tool_name("github", "create_issue").as_deref(),
            Some("mcp__github__create_issue")
        );
        assert_eq!(
            tool_name("s", "get sum.v2").as_deref(),
            Some("mcp__s__get_sum_v2")
        );
        // A tool's own `__` stays in the tool part.
        assert_eq!(
            tool_name("github", "x__pwn").as_deref(),
            Some("mcp__github__x__pwn")
        );
        assert_eq!(tool_name("s", &"x".repeat(80)), None);
        assert_eq!(tool_name("s", ""), None);
    }

    #[test]
    fn content_blocks_become_parts() {
        let parts = parts_of(
            &json!([
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "alpha"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}},
                {"type": "audio", "data": "x", "mimeType": "audio/wav"}
            ]),
            "s",
        );
        let texts: Vec<String> = parts
            .iter()
            .map(|p| match p {
                McpPart::Text(t) => t.clone(),
                McpPart::Image { media_type, .. } => format!("<{media_type}>"),
            })
            .collect();
        assert_eq!(texts[0], "hello");
        assert_eq!(texts[1], "<image/png>");
        assert_eq!(texts[2], "[resource file:///a.txt]\nalpha");
        assert!(texts[3].contains("application/octet-stream") && !texts[3].contains("AAAA"));
        assert!(texts[4].contains("audio"));
    }
}
