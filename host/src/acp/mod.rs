//! `stud acp`: stud as an Agent Client Protocol agent, JSON-RPC over its
//! stdio, so editors (Zed, JetBrains, Neovim, Emacs) drive it. stdout
//! carries only protocol frames; warnings go to stderr.

mod replay;
mod updates;
mod worker;

use std::process::ExitCode;

use agent_client_protocol::v1::schema;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::paths::StudHome;
use worker::Cmd;

/// Serve one editor until it closes stdin.
pub fn run() -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(serve(home))
        .map_err(|e| anyhow::anyhow!("acp: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

type Sessions = std::sync::Arc<std::sync::OnceLock<mpsc::UnboundedSender<Cmd>>>;

/// The sessions' thread needs the connection; it starts with the first
/// request that has one.
fn sessions(
    slot: &Sessions,
    home: &StudHome,
    conn: &ConnectionTo<Client>,
) -> mpsc::UnboundedSender<Cmd> {
    slot.get_or_init(|| worker::spawn(home.clone(), conn.clone()))
        .clone()
}

async fn serve(home: StudHome) -> Result<(), Error> {
    let slot: Sessions = Default::default();
    let (new_slot, prompt_slot, load_slot, cancel_slot) =
        (slot.clone(), slot.clone(), slot.clone(), slot);
    let (new_home, prompt_home, load_home, cancel_home) =
        (home.clone(), home.clone(), home.clone(), home);
    Agent
        .v1()
        .name("stud")
        .on_receive_request(
            async |request: schema::InitializeRequest,
                   responder: Responder<schema::InitializeResponse>,
                   _conn: ConnectionTo<Client>| {
                let _ = request;
                let response = json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"embeddedContext": true, "image": false, "audio": false}
                    },
                    "agentInfo": {"name": "stud", "version": env!("CARGO_PKG_VERSION")},
                    "authMethods": []
                });
                match serde_json::from_value(response) {
                    Ok(r) => responder.respond(r),
                    Err(e) => responder.respond_with_error(Error::internal_error().data(e.to_string())),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::NewSessionRequest,
                        responder: Responder<schema::NewSessionResponse>,
                        conn: ConnectionTo<Client>| {
                let tx = sessions(&new_slot, &new_home, &conn);
                let (reply, answer) = oneshot::channel();
                let _ = tx.send(Cmd::New {
                    cwd: request.cwd.clone(),
                    reply,
                });
                conn.spawn(async move {
                    let reply = answer.await.map(|r| r.map(|id| json!({"sessionId": id})));
                    self::answer(responder, reply, Error::invalid_params)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::PromptRequest,
                        responder: Responder<schema::PromptResponse>,
                        conn: ConnectionTo<Client>| {
                let tx = sessions(&prompt_slot, &prompt_home, &conn);
                let (reply, answer) = oneshot::channel();
                let _ = tx.send(Cmd::Prompt {
                    session: request.session_id.to_string(),
                    text: prompt_text(&request.prompt),
                    reply,
                });
                conn.spawn(async move {
                    let reply = answer.await.map(|r| r.map(|stop| json!({"stopReason": stop})));
                    self::answer(responder, reply, Error::internal_error)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::LoadSessionRequest,
                        responder: Responder<schema::LoadSessionResponse>,
                        conn: ConnectionTo<Client>| {
                let tx = sessions(&load_slot, &load_home, &conn);
                let (reply, answer) = oneshot::channel();
                let _ = tx.send(Cmd::Load {
                    session: request.session_id.to_string(),
                    cwd: request.cwd.clone(),
                    reply,
                });
                conn.spawn(async move {
                    let reply = answer.await.map(|r| r.map(|()| json!({})));
                    self::answer(responder, reply, Error::invalid_params)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: schema::CancelNotification, conn: ConnectionTo<Client>| {
                let tx = sessions(&cancel_slot, &cancel_home, &conn);
                let _ = tx.send(Cmd::Cancel {
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
/// JSON, `Err` an error with stud's message (`refused` says which kind).
fn answer<T: agent_client_protocol::JsonRpcResponse + serde::de::DeserializeOwned>(
    responder: Responder<T>,
    reply: Result<Result<Value, String>, oneshot::error::RecvError>,
    refused: fn() -> Error,
) -> Result<(), Error> {
    match reply {
        Ok(Ok(v)) => match serde_json::from_value(v) {
            Ok(r) => responder.respond(r),
            Err(e) => responder.respond_with_error(Error::internal_error().data(e.to_string())),
        },
        Ok(Err(e)) => responder.respond_with_error(refused().data(e)),
        Err(_) => responder.respond_with_error(Error::internal_error()),
    }
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
