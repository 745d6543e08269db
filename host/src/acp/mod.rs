//! `stud acp`: stud as an Agent Client Protocol agent, JSON-RPC over its
//! stdio, so editors (Zed, JetBrains, Neovim, Emacs) drive it. stdout
//! carries only protocol frames; warnings go to stderr.

mod editor_fs;
mod failure;
mod mcp_servers;
mod replay;
mod turns;
mod updates;
mod worker;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::kernel::Mode;
use crate::paths::StudHome;
use crate::runtime::domain::{Image, ImageSource};
pub use failure::{Failure, STUD_FAILED};
use worker::{Cmd, Opened, Opening};

/// Serve one editor until it closes stdin.
pub fn run() -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let rt = tokio::runtime::Runtime::new()?;
    let shared = Shared {
        home,
        sessions: Default::default(),
        offer: Default::default(),
    };
    let served = rt.block_on(serve(shared.clone()));
    rt.block_on(shared.shutdown());
    served.map_err(|e| anyhow::anyhow!("acp: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// What the editor said it can do at `initialize`.
#[derive(Clone, Copy, Default)]
struct Offer {
    /// Both `fs/read_text_file` and `fs/write_text_file`.
    fs: bool,
}

/// The connection's shared state: the sessions' thread (started with the
/// first request that has a connection) and the editor's offer.
#[derive(Clone)]
struct Shared {
    home: StudHome,
    sessions: Arc<std::sync::OnceLock<mpsc::UnboundedSender<Cmd>>>,
    offer: Arc<Mutex<Offer>>,
}

impl Shared {
    fn sessions(&self, conn: &ConnectionTo<Client>) -> mpsc::UnboundedSender<Cmd> {
        self.sessions
            .get_or_init(|| worker::spawn(self.home.clone(), conn.clone()))
            .clone()
    }

    /// End every session before the process exits, so their MCP servers
    /// and other children do not outlive the editor's connection.
    async fn shutdown(&self) {
        let Some(tx) = self.sessions.get() else {
            return;
        };
        let (done, ended) = oneshot::channel();
        if tx.send(Cmd::Shutdown { done }).is_ok() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ended).await;
        }
    }

    fn offer(&self) -> Offer {
        *self.offer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `session/new` or `session/load` asked for.
    fn opening(
        &self,
        cwd: std::path::PathBuf,
        mcp: &[schema::McpServer],
        meta: Option<&serde_json::Map<String, Value>>,
        resume: Option<String>,
    ) -> Result<Opening, Failure> {
        let mode = match meta.and_then(|m| m.get("stud")).and_then(|s| s.get("mode")) {
            None => None,
            Some(m) => Some(
                m.as_str()
                    .unwrap_or_default()
                    .parse::<Mode>()
                    .map_err(|e| Failure::invalid("_meta.stud.mode", "unknown-mode", e))?,
            ),
        };
        let mcp =
            mcp_servers::editor_servers(mcp, &crate::extensions::registry::project_dir(&cwd))?;
        Ok(Opening {
            cwd,
            mcp,
            mode,
            fs: self.offer().fs,
            resume,
        })
    }
}

/// The security modes as ACP session modes.
fn modes(current: Mode) -> Value {
    json!({
        "currentModeId": current.as_str(),
        "availableModes": [
            {"id": "ask", "name": "Ask", "description": "Ask before every tool call that changes something"},
            {"id": "allowlist", "name": "Allowlist", "description": "Run what the allowlist names; refuse the rest"},
            {"id": "yolo", "name": "Yolo", "description": "Run every tool call without asking"},
        ]
    })
}

/// Open a session, answer the request with `response(opened)`, then tell
/// the editor the session's slash commands.
fn open<T: agent_client_protocol::JsonRpcResponse + serde::de::DeserializeOwned>(
    shared: &Shared,
    conn: ConnectionTo<Client>,
    opening: Result<Opening, Failure>,
    responder: Responder<T>,
    response: fn(&Opened) -> Value,
) -> Result<(), Error> {
    let opening = match opening {
        Ok(o) => o,
        Err(f) => return responder.respond_with_error(f.into_error()),
    };
    let (reply, answer) = oneshot::channel();
    let _ = shared.sessions(&conn).send(Cmd::Open { opening, reply });
    let notify = conn.clone();
    conn.spawn(async move {
        let opened = match answer.await {
            Ok(Ok(o)) => o,
            Ok(Err(f)) => return responder.respond_with_error(f.into_error()),
            Err(_) => return responder.respond_with_error(Error::internal_error()),
        };
        self::answer(responder, Ok(Ok(response(&opened))))?;
        let note = json!({
            "sessionId": opened.id,
            "update": {"sessionUpdate": "available_commands_update", "availableCommands": opened.commands},
        });
        if let Ok(n) = serde_json::from_value::<schema::SessionNotification>(note) {
            let _ = notify.send_notification(n);
        }
        let _ = opened.announced.send(());
        Ok(())
    })
}

async fn serve(shared: Shared) -> Result<(), Error> {
    let (init, new, prompt, load, mode, cancel) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared,
    );
    Agent
        .v1()
        .name("stud")
        .on_receive_request(
            async move |request: schema::InitializeRequest,
                        responder: Responder<schema::InitializeResponse>,
                        _conn: ConnectionTo<Client>| {
                let fs = &request.client_capabilities.fs;
                *init.offer.lock().unwrap_or_else(|p| p.into_inner()) = Offer {
                    fs: fs.read_text_file && fs.write_text_file,
                };
                let response = json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"embeddedContext": true, "image": true, "audio": false}
                    },
                    "agentInfo": {"name": "stud", "version": env!("CARGO_PKG_VERSION")},
                    "authMethods": []
                });
                answer(responder, Ok(Ok(response)))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::NewSessionRequest,
                        responder: Responder<schema::NewSessionResponse>,
                        conn: ConnectionTo<Client>| {
                let opening = new.opening(
                    request.cwd.clone(),
                    &request.mcp_servers,
                    request.meta.as_ref(),
                    None,
                );
                open(&new, conn, opening, responder, |o| {
                    json!({"sessionId": o.id, "modes": modes(o.mode)})
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::LoadSessionRequest,
                        responder: Responder<schema::LoadSessionResponse>,
                        conn: ConnectionTo<Client>| {
                let opening = load.opening(
                    request.cwd.clone(),
                    &request.mcp_servers,
                    request.meta.as_ref(),
                    Some(request.session_id.to_string()),
                );
                open(&load, conn, opening, responder, |o| json!({"modes": modes(o.mode)}))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::PromptRequest,
                        responder: Responder<schema::PromptResponse>,
                        conn: ConnectionTo<Client>| {
                let images = match prompt_images(&request.prompt) {
                    Ok(images) => images,
                    Err(f) => return responder.respond_with_error(f.into_error()),
                };
                let (reply, answer) = oneshot::channel();
                let _ = prompt.sessions(&conn).send(Cmd::Prompt {
                    session: request.session_id.to_string(),
                    text: prompt_text(&request.prompt),
                    images,
                    reply,
                });
                conn.spawn(async move {
                    let reply = answer.await.map(|r| r.map(|stop| json!({"stopReason": stop})));
                    self::answer(responder, reply)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::SetSessionModeRequest,
                        responder: Responder<schema::SetSessionModeResponse>,
                        conn: ConnectionTo<Client>| {
                let (reply, answer) = oneshot::channel();
                let _ = mode.sessions(&conn).send(Cmd::SetMode {
                    session: request.session_id.to_string(),
                    mode: request.mode_id.to_string(),
                    reply,
                });
                conn.spawn(async move {
                    let reply = answer.await.map(|r| r.map(|()| json!({})));
                    self::answer(responder, reply)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: schema::CancelNotification, conn: ConnectionTo<Client>| {
                let _ = cancel.sessions(&conn).send(Cmd::Cancel {
                    session: n.session_id.to_string(),
                });
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// Answer a request with the sessions' reply: `Ok` is the response's
/// JSON, `Err` the failure as a typed JSON-RPC error.
fn answer<T: agent_client_protocol::JsonRpcResponse + serde::de::DeserializeOwned>(
    responder: Responder<T>,
    reply: Result<Result<Value, Failure>, oneshot::error::RecvError>,
) -> Result<(), Error> {
    match reply {
        Ok(Ok(v)) => match serde_json::from_value(v) {
            Ok(r) => responder.respond(r),
            Err(e) => responder.respond_with_error(Error::internal_error().data(e.to_string())),
        },
        Ok(Err(f)) => responder.respond_with_error(f.into_error()),
        Err(_) => responder.respond_with_error(Error::internal_error()),
    }
}

/// The most base64 text one image may carry (about 15 MB of image; the
/// providers' own limits are lower, and a prompt must not be able to
/// make the session hold gigabytes).
const MAX_IMAGE_BASE64: usize = 20 * 1024 * 1024;

/// Image types every vision model stud talks to takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The prompt's image blocks, for a model with vision (the session says
/// so before the turn starts). Only inline data: stud fetches nothing a
/// prompt points at.
fn prompt_images(blocks: &[schema::ContentBlock]) -> Result<Vec<Image>, Failure> {
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let v = serde_json::to_value(b).unwrap_or(Value::Null);
        if v["type"] != "image" {
            continue;
        }
        let field = "prompt";
        let media_type = v["mimeType"].as_str().unwrap_or_default();
        if !IMAGE_TYPES.contains(&media_type) {
            return Err(Failure::invalid(
                field,
                "image-type-unsupported",
                format!(
                    "block {i}: `{media_type}` is not an image type stud sends (use one of {})",
                    IMAGE_TYPES.join(", ")
                ),
            ));
        }
        let data = v["data"].as_str().unwrap_or_default();
        if data.len() > MAX_IMAGE_BASE64 {
            return Err(Failure::invalid(
                field,
                "image-too-large",
                format!(
                    "block {i}: the image is {} bytes of base64, over the {MAX_IMAGE_BASE64} stud sends; send a smaller one",
                    data.len()
                ),
            ));
        }
        let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
        if data.is_empty() || !data.chars().all(base64) {
            return Err(Failure::invalid(
                field,
                "image-data-invalid",
                format!("block {i}: `data` must be the image's bytes in base64"),
            ));
        }
        out.push(Image {
            media_type: media_type.to_string(),
            source: ImageSource::Base64(data.to_string()),
        });
    }
    Ok(out)
}

/// The prompt's text blocks, and embedded resources' text as context.
fn prompt_text(blocks: &[schema::ContentBlock]) -> String {
    let mut parts = Vec::new();
    for b in blocks {
        let v = serde_json::to_value(b).unwrap_or(Value::Null);
        match v["type"].as_str() {
            Some("text") => parts.push(v["text"].as_str().unwrap_or_default().to_string()),
            Some("resource") => {
                let r = &v["resource"];
                if let Some(t) = r["text"].as_str() {
                    parts.push(format!(
                        "<context uri=\"{}\">\n{t}\n</context>",
                        r["uri"].as_str().unwrap_or_default()
                    ));
                }
            }
            Some("resource_link") => {
                parts.push(format!("@{}", v["uri"].as_str().unwrap_or_default()))
            }
            _ => {}
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(v: Value) -> Vec<schema::ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    fn code(r: Result<Vec<Image>, Failure>) -> String {
        match r {
            Err(Failure::Invalid { code, .. }) => code.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn images_are_checked_before_they_reach_a_session() {
        let ok = prompt_images(&blocks(json!([
            {"type": "text", "text": "see"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
        ])))
        .unwrap();
        assert_eq!(ok.len(), 1);
        let img = |mime: &str, data: String| {
            prompt_images(&blocks(
                json!([{"type": "image", "mimeType": mime, "data": data}]),
            ))
        };
        assert_eq!(
            code(img("image/svg+xml", "PHN2Zz4=".into())),
            "image-type-unsupported"
        );
        assert_eq!(
            code(img("image/png", "not base64!".into())),
            "image-data-invalid"
        );
        let huge = "A".repeat(MAX_IMAGE_BASE64 + 4);
        assert_eq!(code(img("image/png", huge)), "image-too-large");
    }
}
