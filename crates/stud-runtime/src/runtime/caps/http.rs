//! `http`: outbound requests for extensions granted network hosts. The URL
//! (and every redirect, and the addresses a name resolves to) is checked
//! against the extension's [`NetPolicy`] before any connection is made.
//! The body streams chunk by chunk, so SSE reaches the guest as it
//! arrives. Time spent waiting on the network does not count against the
//! guest's deadline; cancelling the turn aborts the wait.

use std::error::Error as _;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use reqwest::{Method, Url};
use wasmtime::component::Resource;

use crate::runtime::contract::v0_1::stud::extension::http::{self as h, Header, Request};
use crate::runtime::host_state::HostState;
use crate::runtime::net::{NetDenied, NetLimits, NetPolicy, build_client, without_query};
use crate::runtime::services::{ErrorClass, ExtError, ext_error};

/// Longest wait for the next body chunk before the response is given up.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest request timeout an extension may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// One extension's grant, the bounds of its responses, and its (lazily
/// built) client.
pub struct NetAccess {
    pub policy: Arc<NetPolicy>,
    pub limits: NetLimits,
    client: OnceLock<reqwest::Client>,
}

impl NetAccess {
    pub fn new(policy: NetPolicy, limits: NetLimits) -> Self {
        NetAccess {
            policy: Arc::new(policy),
            limits,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, ExtError> {
        if let Some(c) = self.client.get() {
            return Ok(c.clone());
        }
        let built = build_client(self.policy.clone()).map_err(|e| {
            ext_error(
                ErrorClass::ExtensionHost,
                "http-client",
                format!("cannot set up HTTP for `{}`: {e}", self.policy.ext),
            )
        })?;
        Ok(self.client.get_or_init(|| built).clone())
    }
}

/// The host side of the `response` resource.
pub struct HttpResponse {
    status: u16,
    headers: Vec<Header>,
    /// `None` once the body ended or failed.
    body: Option<reqwest::Response>,
    /// When the whole response must have arrived.
    deadline: Instant,
    /// Body bytes it may still bring.
    bytes_left: u64,
    limits: NetLimits,
}

fn denied(d: &NetDenied) -> ExtError {
    ext_error(ErrorClass::ToolTerminal, "network-denied", d.to_string())
}

fn invalid(message: String) -> ExtError {
    ext_error(ErrorClass::ToolTerminal, "input-invalid", message)
}

fn too_large(limits: NetLimits) -> ExtError {
    ext_error(
        ErrorClass::ExtensionHost,
        "response-too-large",
        format!(
            "the response is larger than {} bytes (runtime.network.maxResponseBytes); it was abandoned",
            limits.max_response_bytes
        ),
    )
}

fn cancelled() -> ExtError {
    ext_error(
        ErrorClass::Cancellation,
        "cancelled",
        "the request was cancelled",
    )
}

/// A transport error as the guest sees it: a policy refusal keeps its
/// message; anything else is transient (retry may help) and never
/// includes the URL (its query may hold a key).
fn transport(e: &reqwest::Error) -> ExtError {
    let mut cause: Option<&dyn std::error::Error> = e.source();
    let mut root = None;
    while let Some(c) = cause {
        if let Some(d) = c.downcast_ref::<NetDenied>() {
            return denied(d);
        }
        root = Some(c.to_string());
        cause = c.source();
    }
    let (code, what) = if e.is_timeout() {
        ("network-timeout", "timed out")
    } else if e.is_connect() {
        ("network-connect", "could not connect")
    } else {
        ("network", "failed")
    };
    let host = e
        .url()
        .and_then(|u| u.host_str())
        .unwrap_or("the server")
        .to_string();
    let detail = root.map(|r| format!(": {r}")).unwrap_or_default();
    ext_error(
        ErrorClass::ProviderTransient,
        code,
        format!("the request to {host} {what}{detail}"),
    )
}

impl HostState {
    /// The name of a secret of this extension that `req` would carry in
    /// clear text to another machine (plain `http` to a host that is not
    /// loopback), if any.
    fn secret_over_plain_http(&self, url: &Url, req: &Request) -> Option<String> {
        if url.scheme() != "http" || is_loopback(url) {
            return None;
        }
        let carries = |value: &str| {
            let needle = value.as_bytes();
            let contains = |hay: &[u8]| memchr::memmem::find(hay, needle).is_some();
            contains(req.url.as_bytes())
                || req.headers.iter().any(|h| contains(h.value.as_bytes()))
                || req.body.as_deref().is_some_and(contains)
        };
        self.ext
            .secret_values
            .iter()
            .filter_map(|(name, v)| v.as_ref().ok().map(|v| (name, v)))
            .find(|(_, v)| !v.is_empty() && carries(v))
            .map(|(name, _)| name.clone())
    }
}

/// `localhost`, `*.localhost` or a loopback address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let d = bare.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
    }
}

impl h::Host for HostState {
    async fn send(
        &mut self,
        req: Request,
    ) -> wasmtime::Result<Result<Resource<HttpResponse>, ExtError>> {
        if let Err(message) = self.effects_allowed("http.send") {
            return Ok(Err(ext_error(
                ErrorClass::ToolTerminal,
                "effect-outside-call",
                message,
            )));
        }
        let Some(net) = self.ext.net.clone() else {
            return Ok(Err(ext_error(
                ErrorClass::ToolTerminal,
                "network-denied",
                format!("extension `{}` has no network grant", self.ext.id),
            )));
        };
        let url: Url = match req.url.parse() {
            Ok(u) => u,
            Err(e) => return Ok(Err(invalid(format!("bad URL: {e}")))),
        };
        if let Err(d) = net.policy.check(&url) {
            return Ok(Err(denied(&d)));
        }
        if let Some(name) = self.secret_over_plain_http(&url, &req) {
            return Ok(Err(ext_error(
                ErrorClass::ToolTerminal,
                "secret-over-plain-http",
                format!(
                    "extension `{}` tried to send the secret {name} to {} over plain http; keys only travel over https (or plain http to this machine). Use an https:// baseUrl",
                    self.ext.id,
                    without_query(&url)
                ),
            )));
        }
        let method = match Method::from_bytes(req.method.to_ascii_uppercase().as_bytes()) {
            Ok(m) => m,
            Err(_) => return Ok(Err(invalid(format!("bad method `{}`", req.method)))),
        };
        let client = match net.client() {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let mut builder = client.request(method, url);
        for header in req.headers {
            builder = builder.header(header.name, header.value);
        }
        if let Some(body) = req.body {
            self.ext.meter.add_net(body.len() as u64, 0);
            builder = builder.body(body);
        }
        if let Some(ms) = req.timeout_ms {
            builder = builder.timeout(Duration::from_millis(u64::from(ms)).min(MAX_TIMEOUT));
        }
        let request = match builder.build() {
            Ok(r) => r,
            Err(e) => return Ok(Err(invalid(format!("bad request: {}", e.without_url())))),
        };
        let started = Instant::now();
        let limits = net.limits;
        let paused = self.deadline.pause();
        let sent = tokio::select! {
            r = tokio::time::timeout(limits.header_timeout, client.execute(request)) => Some(r),
            _ = self.deadline.cancelled() => None,
        };
        drop(paused);
        let response = match sent {
            None => return Ok(Err(cancelled())),
            Some(Err(_)) => {
                return Ok(Err(ext_error(
                    ErrorClass::ProviderTransient,
                    "headers-timeout",
                    format!(
                        "the server sent no response headers within {} ms (runtime.network.headerTimeoutMs); the request was abandoned",
                        limits.header_timeout.as_millis()
                    ),
                )));
            }
            Some(Ok(Err(e))) => return Ok(Err(transport(&e))),
            Some(Ok(Ok(r))) => r,
        };
        if response
            .content_length()
            .is_some_and(|n| n > limits.max_response_bytes)
        {
            return Ok(Err(too_large(limits)));
        }
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| Header {
                name: name.as_str().to_string(),
                value: String::from_utf8_lossy(value.as_bytes()).into_owned(),
            })
            .collect();
        let handle = self.table().push(HttpResponse {
            status: response.status().as_u16(),
            headers,
            body: Some(response),
            deadline: started + limits.response_timeout,
            bytes_left: limits.max_response_bytes,
            limits,
        })?;
        Ok(Ok(handle))
    }
}

impl h::HostResponse for HostState {
    async fn status(&mut self, this: Resource<HttpResponse>) -> wasmtime::Result<u16> {
        Ok(self.table().get(&this)?.status)
    }

    async fn headers(&mut self, this: Resource<HttpResponse>) -> wasmtime::Result<Vec<Header>> {
        Ok(self.table().get(&this)?.headers.clone())
    }

    async fn next_chunk(
        &mut self,
        this: Resource<HttpResponse>,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, ExtError>> {
        let cancel = self.deadline.cancelled();
        let response = self.table().get_mut(&this)?;
        let Some(mut body) = response.body.take() else {
            return Ok(Ok(None));
        };
        let (deadline, limits) = (response.deadline, response.limits);
        let remaining = deadline.saturating_duration_since(Instant::now());
        let wait = remaining.min(IDLE_TIMEOUT);
        let paused = self.deadline.pause();
        let next = tokio::select! {
            r = tokio::time::timeout(wait, body.chunk()) => Some(r),
            _ = cancel => None,
        };
        drop(paused);
        let result = match next {
            None => Err(cancelled()),
            Some(Err(_)) if wait < IDLE_TIMEOUT => Err(ext_error(
                ErrorClass::ExtensionHost,
                "response-timeout",
                format!(
                    "the response took longer than {} ms in all (runtime.network.responseTimeoutMs); it was abandoned",
                    limits.response_timeout.as_millis()
                ),
            )),
            Some(Err(_)) => Err(ext_error(
                ErrorClass::ProviderTransient,
                "network-timeout",
                format!(
                    "no data from the server for {} s; the response was abandoned",
                    IDLE_TIMEOUT.as_secs()
                ),
            )),
            Some(Ok(Err(e))) => Err(transport(&e)),
            Some(Ok(Ok(None))) => Ok(None),
            Some(Ok(Ok(Some(bytes)))) => {
                self.ext.meter.add_net(0, bytes.len() as u64);
                let response = self.table().get_mut(&this)?;
                match response.bytes_left.checked_sub(bytes.len() as u64) {
                    Some(left) => {
                        response.bytes_left = left;
                        response.body = Some(body);
                        Ok(Some(bytes.to_vec()))
                    }
                    None => Err(too_large(limits)),
                }
            }
        };
        Ok(result)
    }

    async fn drop(&mut self, this: Resource<HttpResponse>) -> wasmtime::Result<()> {
        self.table().delete(this)?;
        Ok(())
    }
}
