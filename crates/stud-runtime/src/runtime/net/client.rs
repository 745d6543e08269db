//! One HTTP client per extension, with its policy built in: the resolver
//! refuses internal addresses to names not granted exactly (the check runs
//! on the addresses actually dialled, so DNS rebinding cannot slip past),
//! and every redirect is checked like the first request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;

use super::address::is_internal;
use super::policy::{NetDenied, NetPolicy, without_query};

/// Most redirects followed for one request.
pub const MAX_REDIRECTS: usize = 10;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

struct PolicyResolver {
    policy: Arc<NetPolicy>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !policy.exact(&host)
                && let Some(bad) = addrs.iter().find(|a| is_internal(a.ip()))
            {
                return Err(Box::new(NetDenied::Internal {
                    ext: policy.ext.clone(),
                    fix: policy.fix(&host),
                    host,
                    addr: bad.ip(),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The client for one extension. Proxies from the environment are not
/// used: the policy must see the real destination.
pub fn build_client(policy: Arc<NetPolicy>) -> reqwest::Result<reqwest::Client> {
    let for_redirects = policy.clone();
    let redirects = redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            let url = without_query(attempt.url());
            return attempt.error(NetDenied::TooManyRedirects {
                ext: for_redirects.ext.clone(),
                url,
                max: MAX_REDIRECTS,
            });
        }
        // A request that went out over https may carry a key in its
        // headers; following it to plain http elsewhere would expose it.
        let downgrade = attempt.url().scheme() == "http"
            && attempt.previous().iter().any(|u| u.scheme() == "https")
            && !crate::runtime::caps::http::is_loopback(attempt.url());
        if downgrade {
            let url = without_query(attempt.url());
            return attempt.error(NetDenied::Downgrade {
                ext: for_redirects.ext.clone(),
                url,
            });
        }
        match for_redirects.check(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(denied) => attempt.error(denied),
        }
    });
    reqwest::Client::builder()
        .dns_resolver(Arc::new(PolicyResolver { policy }))
        .redirect(redirects)
        .connect_timeout(CONNECT_TIMEOUT)
        .no_proxy()
        .user_agent(concat!("stud/", env!("CARGO_PKG_VERSION")))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manifest asks for `manifest`; the user granted `user`.
    fn policy(manifest: &[&str], user: &[&str]) -> Arc<NetPolicy> {
        let parse = |v: &[&str]| v.iter().map(|p| p.parse().unwrap()).collect();
        Arc::new(NetPolicy::new(
            "probe".parse().unwrap(),
            parse(manifest),
            parse(user),
            true,
        ))
    }

    async fn resolve(policy: Arc<NetPolicy>, name: &str) -> Result<Vec<SocketAddr>, String> {
        let resolver = PolicyResolver { policy };
        let name: Name = name.parse().unwrap();
        resolver
            .resolve(name)
            .await
            .map(|a| a.collect())
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn internal_answers_need_an_exact_grant() {
        // `localhost` resolves to loopback: refused unless granted by name.
        let err = resolve(policy(&["*.example.com"], &[]), "localhost")
            .await
            .unwrap_err();
        assert!(
            err.contains("internal address") && err.contains("`probe`"),
            "{err}"
        );
        // The manifest naming it is not enough; the user must.
        let err = resolve(policy(&["localhost"], &[]), "localhost")
            .await
            .unwrap_err();
        assert!(err.contains("internal address"), "{err}");
        let addrs = resolve(policy(&[], &["localhost"]), "localhost")
            .await
            .unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }
}
