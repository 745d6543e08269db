//! `stud mcp login`: the MCP authorization flow for one HTTP server.
//! Discovery (the server's protected-resource metadata, then its
//! authorization server's), dynamic client registration as a public
//! client, PKCE and the resource indicator are rmcp's; this file catches
//! the browser's redirect on a loopback port and keeps the tokens.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::net::OAuthHttp;
use super::store::TokenStore;
use crate::mcp::{McpServer, Transport};

/// How long the browser may take to come back.
pub const WAIT: Duration = Duration::from_secs(300);
const CALLBACK_PATH: &str = "/callback";
const MAX_REQUEST: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(
        "MCP server `{0}` is a stdio server; only HTTP servers log in (a stdio server gets its keys through `env`)"
    )]
    NotHttp(String),
    #[error("MCP server `{server}`: its `url` {reason}")]
    Url { server: String, reason: String },
    #[error("MCP server `{server}`: {step} failed: {reason}")]
    Flow {
        server: String,
        step: &'static str,
        reason: String,
    },
    #[error("MCP server `{server}`: the authorization server refused the login: {error}")]
    Refused { server: String, error: String },
    #[error(
        "MCP server `{server}`: no answer from the browser within {} s; run `stud mcp login {server}` again",
        waited.as_secs()
    )]
    TimedOut { server: String, waited: Duration },
    #[error("MCP server `{server}`: cannot listen for the browser's answer on 127.0.0.1: {reason}")]
    Listen {
        server: String,
        reason: std::io::Error,
    },
}

/// What the login got.
#[derive(Debug)]
pub struct LoggedIn {
    pub scopes: Vec<String>,
    pub expires_in: Option<Duration>,
    pub refreshable: bool,
}

/// The flow's steps as the person sees them, so the front end decides how
/// to show the URL (print it, open a browser).
pub trait LoginUi {
    fn open(&self, url: &str);
}

/// Log in to `server`; `wait` bounds the time the browser may take.
pub async fn login(
    server: &McpServer,
    home_root: &Path,
    ui: &dyn LoginUi,
    wait: Duration,
) -> Result<LoggedIn, LoginError> {
    let Transport::Http { url, .. } = &server.transport else {
        return Err(LoginError::NotHttp(server.id.clone()));
    };
    let id = server.id.clone();
    let flow = |step: &'static str| {
        let id = id.clone();
        move |e: AuthError| LoginError::Flow {
            server: id,
            step,
            reason: e.to_string(),
        }
    };
    let parsed = Url::parse(url).map_err(|e| LoginError::Url {
        server: id.clone(),
        reason: format!("is not a URL ({e})"),
    })?;
    let http = OAuthHttp::new(&parsed).map_err(|e| LoginError::Url {
        server: id.clone(),
        reason: e.to_string(),
    })?;
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|reason| LoginError::Listen {
            server: id.clone(),
            reason,
        })?;
    let port = listener
        .local_addr()
        .map_err(|reason| LoginError::Listen {
            server: id.clone(),
            reason,
        })?
        .port();
    let redirect = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    let store = TokenStore::new(home_root, &server.id, url);
    let mut manager =
        AuthorizationManager::new_with_oauth_http_client(url.as_str(), Arc::new(http))
            .await
            .map_err(flow("setting up"))?;
    manager.set_credential_store(store.clone());
    let found = manager
        .resolve_metadata_from_challenge(None)
        .await
        .map_err(flow("discovering its authorization server"))?;
    manager.set_metadata(found.metadata);
    let request = AuthorizationRequest::new(redirect).with_client_name("stud");
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| flow("registering stud with its authorization server")(e))?;
    let state = query_value(&session.auth_url, "state").unwrap_or_default();
    ui.open(&session.auth_url);

    let answer = tokio::time::timeout(wait, callback(&listener, &state, port))
        .await
        .map_err(|_| LoginError::TimedOut {
            server: id.clone(),
            waited: wait,
        })?;
    let (mut stream, target) = answer.map_err(|reason| LoginError::Listen {
        server: id.clone(),
        reason,
    })?;
    if let Some(error) = query_value(&target, "error") {
        let detail = query_value(&target, "error_description").unwrap_or_default();
        respond(
            &mut stream,
            400,
            "stud: the login was refused. You can close this tab.",
        )
        .await;
        // The authorization server's words end up on the terminal.
        let said = format!("{error} {detail}");
        return Err(LoginError::Refused {
            server: id,
            error: stud_protocol::terminal::safe(said.trim()).into_owned(),
        });
    }
    match session.handle_callback_url(&target).await {
        Ok(_) => {
            respond(&mut stream, 200, "stud: logged in. You can close this tab.").await;
        }
        Err(e) => {
            respond(
                &mut stream,
                400,
                "stud: the login failed; see the terminal.",
            )
            .await;
            return Err(flow("exchanging the code for a token")(e));
        }
    }
    let kept = store.load().await.map_err(flow("keeping the token"))?;
    // The token response read as its wire form (OAuth's field names).
    let token = kept
        .as_ref()
        .and_then(|c| c.token_response.as_ref())
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or_default();
    let scopes = match token["scope"].as_str() {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => kept.map(|c| c.granted_scopes).unwrap_or_default(),
    };
    Ok(LoggedIn {
        scopes,
        expires_in: token["expires_in"].as_u64().map(Duration::from_secs),
        refreshable: token["refresh_token"].is_string(),
    })
}

/// The first request to the callback path whose `state` is ours: its
/// full URL. Anything else on the port (another page, a forged state)
/// gets an error page and the wait goes on.
async fn callback(
    listener: &TcpListener,
    state: &str,
    port: u16,
) -> std::io::Result<(TcpStream, String)> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let Some(path) = read_target(&mut stream).await else {
            respond(&mut stream, 400, "stud: not a request stud understands.").await;
            continue;
        };
        let url = format!("http://127.0.0.1:{port}{path}");
        let ours = path.split('?').next() == Some(CALLBACK_PATH)
            && query_value(&url, "state").as_deref() == Some(state);
        if ours {
            return Ok((stream, url));
        }
        respond(
            &mut stream,
            404,
            "stud: this is not the login stud is waiting for.",
        )
        .await;
    }
}

/// The request target of one HTTP/1 request (headers only; a callback is
/// a GET), or `None` for anything malformed or too large.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => {
                return (req.method == Some("GET"))
                    .then(|| req.path.map(str::to_string))
                    .flatten();
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_REQUEST => continue,
            _ => return None,
        }
    }
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!("<!doctype html><title>stud</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn query_value(url: &str, key: &str) -> Option<String> {
    Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}
