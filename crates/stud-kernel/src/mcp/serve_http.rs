//! `stud mcp serve --http`: the same server as on stdio, over MCP's
//! streamable HTTP (rmcp's tower service under hyper), for clients that
//! cannot start a process. Loopback only, and every request carries the
//! bearer token stud printed or was given: any program on the machine can
//! reach a loopback port, and a web page can make a browser send to one.
//! rmcp's own checks turn away a foreign `Host` (DNS rebinding) and any
//! browser `Origin`.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

use super::serve::{ServeError, prepare, run_jobs};
use crate::kernel::Launched;

/// The path clients post to.
pub const PATH: &str = "/mcp";

/// A token a client must send as `Authorization: Bearer <token>`.
#[derive(Clone)]
pub struct ServeToken(String);

impl ServeToken {
    /// 256 random bits, hex.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the system's random source");
        ServeToken(hex::encode(bytes))
    }

    /// A token chosen by the person (for scripts); none shorter than 16
    /// characters.
    pub fn given(token: String) -> Option<Self> {
        (token.len() >= 16).then_some(ServeToken(token))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compared through digests, so the time taken says nothing about how
    /// much of a guess was right.
    fn admits(&self, header: Option<&hyper::header::HeaderValue>) -> bool {
        let Some(sent) = header
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return false;
        };
        Sha256::digest(sent.trim().as_bytes()) == Sha256::digest(self.0.as_bytes())
    }
}

/// Where the server listens, once it does.
pub struct Listening {
    pub url: String,
}

/// Serve `launched`'s tools at `addr` until `stop` is cancelled; `ready`
/// hears the address once the port is open.
pub async fn serve_http(
    launched: Launched,
    prompt_tool: bool,
    addr: SocketAddr,
    token: ServeToken,
    ready: impl FnOnce(Listening),
    stop: CancellationToken,
) -> Result<Launched, ServeError> {
    if !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|reason| ServeError::Listen { addr, reason })?;
    let bound = listener
        .local_addr()
        .map_err(|reason| ServeError::Listen { addr, reason })?;
    let (server, launched, jobs) = prepare(launched, prompt_tool);
    let mut config = StreamableHttpServerConfig::default().enforce_origin_validation();
    config.cancellation_token = stop.child_token();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    ready(Listening {
        url: format!("http://{bound}{PATH}"),
    });
    let accepting = {
        let stop = stop.clone();
        async move {
            loop {
                let (stream, _) = tokio::select! {
                    _ = stop.cancelled() => return Ok(()),
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        // A connection that failed before it was ours
                        // (reset, out of descriptors for a moment).
                        Err(_) => continue,
                    },
                };
                let service = service.clone();
                let token = token.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    let handle = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let mut service = service.clone();
                        let admitted =
                            token.admits(req.headers().get(hyper::header::AUTHORIZATION));
                        async move {
                            if !admitted {
                                return Ok::<_, Infallible>(unauthorized());
                            }
                            if req.uri().path() != PATH {
                                return Ok(plain(
                                    StatusCode::NOT_FOUND,
                                    "not found; MCP is at /mcp",
                                ));
                            }
                            service.call(req).await
                        }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), handle);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
                    }
                });
            }
        }
    };
    run_jobs(launched, jobs, accepting).await
}

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}

fn unauthorized() -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = plain(
        StatusCode::UNAUTHORIZED,
        "stud mcp serve wants `Authorization: Bearer <token>` (the token stud printed when it started)",
    );
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer realm=\"stud\""),
    );
    r
}
