//! The HTTP under OAuth discovery, registration and token requests: the
//! kernel's reqwest, with a policy of its own. The hosts are not known in
//! advance (the server's metadata names its authorization server), so a
//! host is allowed unless it is, or resolves to, an internal address; the
//! MCP server's own host (the user configured it) is the one exception.
//! Plain http only to loopback. Redirects are followed only when rmcp
//! asks, each checked the same way; bodies are bounded.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use crate::runtime::net::is_internal;

const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_BODY: usize = 1024 * 1024;
const MAX_REDIRECTS: usize = 5;

/// Why an OAuth request was not sent.
#[derive(Debug, thiserror::Error)]
pub enum OAuthNetDenied {
    #[error(
        "the login would contact `{host}`, an internal address ({addr}) other than the MCP server's own host; stud refuses it"
    )]
    Internal { host: String, addr: IpAddr },
    #[error(
        "the login would send to `{url}` over plain http; only https (or http to loopback) is allowed"
    )]
    PlainHttp { url: String },
    #[error("the response from `{url}` is larger than {MAX_BODY} bytes")]
    TooLarge { url: String },
}

/// What may be contacted, shared by the resolver and the URL checks.
#[derive(Clone, Debug)]
struct Reach {
    /// The MCP server's host, as configured.
    own_host: String,
}

impl Reach {
    fn own(&self, host: &str) -> bool {
        bare(host).eq_ignore_ascii_case(bare(&self.own_host))
    }

    fn check(&self, url: &Url) -> Result<(), OAuthNetDenied> {
        let host = url.host_str().unwrap_or_default();
        let literal = bare(host).parse::<IpAddr>().ok();
        let loopback = literal.is_some_and(|ip| ip.is_loopback()) || host == "localhost";
        if url.scheme() != "https" && !loopback {
            return Err(OAuthNetDenied::PlainHttp {
                url: crate::runtime::net::without_query(url),
            });
        }
        if let Some(ip) = literal
            && is_internal(ip)
            && !self.own(host)
        {
            return Err(OAuthNetDenied::Internal {
                host: host.to_string(),
                addr: ip,
            });
        }
        Ok(())
    }
}

fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

struct ReachResolver(Reach);

impl Resolve for ReachResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !reach.own(&host)
                && let Some(bad) = addrs.iter().find(|a| is_internal(a.ip()))
            {
                return Err(Box::new(OAuthNetDenied::Internal {
                    host,
                    addr: bad.ip(),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The client rmcp's authorization manager sends through.
pub struct OAuthHttp {
    reach: Reach,
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl OAuthHttp {
    /// For the MCP server at `server_url`.
    pub fn new(server_url: &Url) -> reqwest::Result<Self> {
        let reach = Reach {
            own_host: server_url.host_str().unwrap_or_default().to_string(),
        };
        let for_redirects = reach.clone();
        let follow = redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match for_redirects.check(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e),
            }
        });
        let build = |policy: redirect::Policy| {
            reqwest::Client::builder()
                .dns_resolver(Arc::new(ReachResolver(reach.clone())))
                .redirect(policy)
                .timeout(TIMEOUT)
                .no_proxy()
                .build()
        };
        Ok(OAuthHttp {
            follow: build(follow)?,
            stop: build(redirect::Policy::none())?,
            reach,
        })
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let request = reqwest::Request::try_from(request.request)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            self.reach
                .check(request.url())
                .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            let url = crate::runtime::net::without_query(request.url());
            let response = client
                .execute(request)
                .await
                .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| Box::new(e) as OAuthHttpClientError)?;
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(Box::new(OAuthNetDenied::TooLarge { url }) as OAuthHttpClientError);
                }
                body.extend_from_slice(&chunk);
            }
            builder
                .body(body)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata naming an internal address (the cloud metadata service, a
    /// LAN host) is refused; the server's own loopback host is allowed, as
    /// is any public https host; plain http only to loopback.
    #[test]
    fn discovery_cannot_be_pointed_inside() {
        let reach = Reach {
            own_host: "127.0.0.1".into(),
        };
        let ok = |u: &str| reach.check(&Url::parse(u).unwrap()).is_ok();
        assert!(ok(
            "http://127.0.0.1:9000/.well-known/oauth-authorization-server"
        ));
        assert!(ok("https://auth.example.com/token"));
        assert!(!ok("http://169.254.169.254/latest/meta-data"));
        assert!(!ok("https://10.0.0.7/token"));
        assert!(!ok("http://auth.example.com/token"));
        let public = Reach {
            own_host: "mcp.example.com".into(),
        };
        assert!(
            public
                .check(&Url::parse("http://127.0.0.1:8080/token").unwrap())
                .is_err()
        );
    }
}
