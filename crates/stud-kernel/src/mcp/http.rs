//! Streamable HTTP for MCP over the kernel's own HTTP client, so a remote
//! server is reached under the same network policy as an extension's
//! `http` import: the configured URL's host is the whole grant (redirects
//! elsewhere are refused, a name that resolves to an internal address is
//! refused unless it is exactly the configured host), no proxies from the
//! environment. `rmcp` speaks the protocol through [`StreamableHttpClient`];
//! this file only moves bytes, with a size bound on every body and event.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt as _};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

use crate::manifest::{ExtensionId, HostPattern};
use crate::runtime::net::{NetPolicy, build_client};

const SESSION_HEADER: &str = "Mcp-Session-Id";
const LAST_EVENT_HEADER: &str = "Last-Event-Id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
/// Largest SSE event accepted (a tool result arrives as one event).
pub const MAX_EVENT: usize = 16 * 1024 * 1024;

/// Why the HTTP layer failed (the connection, the policy, a body too
/// large).
#[derive(Debug, thiserror::Error)]
pub enum McpHttpError {
    #[error("{}", chain(.0))]
    Request(#[from] reqwest::Error),
    #[error("the response is larger than {max} bytes")]
    TooLarge { max: usize },
}

/// An error with its causes, so a policy refusal inside reqwest's
/// "error following redirect" is what the user reads.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

/// The client for one server: reqwest under a policy that grants only
/// the configured URL's host and port.
#[derive(Clone)]
pub struct McpHttp {
    client: reqwest::Client,
    /// Set once the server answered 401: it wants a login.
    challenged: Arc<std::sync::atomic::AtomicBool>,
}

impl McpHttp {
    /// `server` names the grant in refusals (`mcp-<server>`).
    pub fn new(server: &str, url: &Url) -> Result<Self, String> {
        let host = url.host_str().ok_or("the URL has no host")?;
        let port = url.port_or_known_default().unwrap_or(443);
        let grant: HostPattern = format!("{host}:{port}")
            .parse()
            .map_err(|e| format!("the URL's host cannot be granted: {e}"))?;
        let ext: ExtensionId = format!("mcp-{}", server.to_ascii_lowercase().replace('_', "-"))
            .parse()
            .unwrap_or_else(|_| "mcp".parse().expect("a valid id"));
        let fix = format!(
            "an MCP server reaches only the host of its configured URL ({host}:{port}); change the server's `url` to use another"
        );
        let policy = Arc::new(NetPolicy::granted(ext, vec![grant], fix));
        policy.check(url).map_err(|e| e.to_string())?;
        let client = build_client(policy).map_err(|e| e.to_string())?;
        Ok(McpHttp {
            client,
            challenged: Arc::default(),
        })
    }

    /// Whether the server asked for a login (answered 401).
    pub fn challenged(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.challenged.clone()
    }

    /// A 401 as rmcp's `AuthRequired` (its challenge is what OAuth starts
    /// from), remembered for the error the person reads.
    fn auth_required(&self, resp: &reqwest::Response) -> Option<StreamableHttpError<McpHttpError>> {
        if resp.status() != StatusCode::UNAUTHORIZED {
            return None;
        }
        self.challenged
            .store(true, std::sync::atomic::Ordering::Release);
        let header = resp
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("Bearer")
            .to_string();
        Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            header,
        )))
    }
}

type Result2<T> = Result<T, StreamableHttpError<McpHttpError>>;

fn request_error(e: reqwest::Error) -> StreamableHttpError<McpHttpError> {
    StreamableHttpError::Client(McpHttpError::Request(e))
}

fn headers(
    mut b: reqwest::RequestBuilder,
    session: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    for (name, value) in custom {
        b = b.header(name, value);
    }
    if let Some(s) = session {
        b = b.header(SESSION_HEADER, s);
    }
    if let Some(a) = auth {
        b = b.bearer_auth(a);
    }
    b
}

fn media_is(ct: Option<&HeaderValue>, want: &str) -> bool {
    ct.and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(want))
}

/// The whole body, refused past `max` bytes without reading further.
async fn bounded_body(resp: reqwest::Response, max: usize) -> Result2<Vec<u8>> {
    if resp.content_length().is_some_and(|n| n as usize > max) {
        return Err(StreamableHttpError::Client(McpHttpError::TooLarge { max }));
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(request_error)?;
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::Client(McpHttpError::TooLarge { max }));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// SSE events from a byte stream, failing once one event passes `max`
/// bytes (a server cannot make the client buffer without end).
fn bounded_events(
    resp: reqwest::Response,
    max: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    bounded_sse(resp.bytes_stream(), max)
}

fn bounded_sse<S, E>(stream: S, max: usize) -> BoxStream<'static, Result<Sse, SseError>>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut pending = 0usize;
    let mut newline = false;
    let bytes = stream.map(move |chunk| {
        let chunk: Bytes = chunk.map_err(std::io::Error::other)?;
        for &b in chunk.iter() {
            if b == b'\r' {
                continue;
            }
            if b == b'\n' && newline {
                pending = 0;
            }
            newline = b == b'\n';
            pending += 1;
            if pending > max {
                return Err(std::io::Error::other(format!(
                    "an event from the server is larger than {max} bytes"
                )));
            }
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

fn status_error(resp: &reqwest::Response) -> Option<HttpStatusError> {
    let status = resp.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 64)
        .map(str::to_string);
    Some(HttpStatusError::new(status.as_u16(), retry))
}

impl StreamableHttpClient for McpHttp {
    type Error = McpHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result2<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result2<StreamableHttpPostResponse> {
        let had_session = session_id.is_some();
        let req = headers(
            self.client
                .post(uri.as_ref())
                .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}")),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        let body = serde_json::to_vec(&message)?;
        let resp = req
            .header(CONTENT_TYPE, JSON)
            .body(body)
            .send()
            .await
            .map_err(request_error)?;
        if let Some(e) = self.auth_required(&resp) {
            return Err(e);
        }
        let status = resp.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let ct = resp.headers().get(CONTENT_TYPE).cloned();
        let session = resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if !status.is_success() {
            if let Some(e) = status_error(&resp)
                && !media_is(ct.as_ref(), JSON)
            {
                return Err(e.into());
            }
            let body = bounded_body(resp, limits.max_error_response_size).await?;
            if let Ok(msg @ ServerJsonRpcMessage::Error(_)) =
                serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(msg, session));
            }
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).to_string();
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}: {text}").into(),
            ));
        }
        let no_answer_due = !matches!(message, ClientJsonRpcMessage::Request(_));
        if media_is(ct.as_ref(), EVENT_STREAM) {
            let events = bounded_events(resp, limits.max_sse_event_size.min(MAX_EVENT));
            return Ok(StreamableHttpPostResponse::Sse(events, session));
        }
        if media_is(ct.as_ref(), JSON) {
            let body = bounded_body(resp, limits.max_json_response_size).await?;
            if body.is_empty() && no_answer_due {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            let msg: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
            return Ok(StreamableHttpPostResponse::Json(msg, session));
        }
        if no_answer_due && resp.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            ct.map(|v| String::from_utf8_lossy(v.as_bytes()).to_string()),
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result2<()> {
        let req = headers(
            self.client.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let resp = req.send().await.map_err(request_error)?;
        if let Some(e) = self.auth_required(&resp) {
            return Err(e);
        }
        if resp.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        resp.error_for_status().map_err(request_error)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result2<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_EVENT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result2<BoxStream<'static, Result<Sse, SseError>>> {
        let mut req = headers(
            self.client
                .get(uri.as_ref())
                .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}")),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        if let Some(id) = last_event_id {
            req = req.header(LAST_EVENT_HEADER, id);
        }
        let resp = req.send().await.map_err(request_error)?;
        if let Some(e) = self.auth_required(&resp) {
            return Err(e);
        }
        if resp.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(e) = status_error(&resp) {
            return Err(e.into());
        }
        let resp = resp.error_for_status().map_err(request_error)?;
        let ct = resp.headers().get(CONTENT_TYPE);
        if !media_is(ct, EVENT_STREAM) && !media_is(ct, JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(
                ct.map(|v| String::from_utf8_lossy(v.as_bytes()).to_string()),
            ));
        }
        Ok(bounded_events(resp, max_sse_event_size.min(MAX_EVENT)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(
        parts: &[&str],
    ) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + use<> {
        let owned: Vec<Result<Bytes, std::io::Error>> = parts
            .iter()
            .map(|p| Ok(Bytes::from(p.to_string())))
            .collect();
        futures::stream::iter(owned)
    }

    /// Many small events pass; one event that never ends (a server making
    /// the client buffer without end) fails once it passes the bound, even
    /// cut into small chunks.
    #[tokio::test]
    async fn an_endless_event_is_refused_at_the_bound() {
        let fine: Vec<String> = (0..50).map(|i| format!("data: {i}\n\n")).collect();
        let parts: Vec<&str> = fine.iter().map(String::as_str).collect();
        let events: Vec<_> = bounded_sse(chunks(&parts), 64).collect().await;
        assert_eq!(events.len(), 50);
        assert!(events.iter().all(Result::is_ok));

        let long = "x".repeat(40);
        let parts = [
            "data: ",
            long.as_str(),
            long.as_str(),
            long.as_str(),
            "\n\n",
        ];
        let events: Vec<_> = bounded_sse(chunks(&parts), 64).collect().await;
        assert!(events.iter().any(Result::is_err), "{events:?}");
        assert!(!events.iter().any(|e| e.is_ok()), "{events:?}");
    }
}
