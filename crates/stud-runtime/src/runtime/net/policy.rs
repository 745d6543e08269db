//! The network grant of one extension: the hosts its manifest asks for,
//! plus (when the manifest says `user-hosts = true`) the hosts the user
//! granted it in settings. Everything else is denied before a connection
//! is made.

use std::net::IpAddr;

use reqwest::Url;

use super::address::is_internal;

use crate::manifest::{ExtensionId, HostPattern};

/// Why a request was refused. Each message names the extension, the host
/// and what would allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetDenied {
    #[error("extension `{ext}` may not fetch `{url}`: only http:// and https:// URLs are allowed")]
    Scheme { ext: ExtensionId, url: String },
    #[error("extension `{ext}` may not connect to `{host}:{port}`: the host is not granted; {fix}")]
    NotGranted {
        ext: ExtensionId,
        host: String,
        port: u16,
        fix: String,
    },
    #[error(
        "extension `{ext}` may not connect to `{host}`: it resolves to the internal address {addr}, which is refused unless exactly `{host}` is granted; {fix}"
    )]
    Internal {
        ext: ExtensionId,
        host: String,
        addr: IpAddr,
        fix: String,
    },
    #[error("extension `{ext}`: more than {max} redirects from `{url}`")]
    TooManyRedirects {
        ext: ExtensionId,
        url: String,
        max: usize,
    },
    #[error(
        "extension `{ext}`: a redirect from https to plain http (`{url}`) is refused: it would send what the request carries (keys in headers) in clear text"
    )]
    Downgrade { ext: ExtensionId, url: String },
}

/// What one extension may reach.
#[derive(Debug, Clone)]
pub struct NetPolicy {
    pub ext: ExtensionId,
    manifest: Vec<HostPattern>,
    user: Vec<HostPattern>,
    user_hosts: bool,
    /// What to tell the user instead of the settings advice (the grant
    /// comes from somewhere else, such as an MCP server's URL).
    fix_note: Option<String>,
}

impl NetPolicy {
    /// `user` is what settings grant; it counts only when the manifest
    /// accepts user-granted hosts.
    pub fn new(
        ext: ExtensionId,
        manifest: Vec<HostPattern>,
        user: Vec<HostPattern>,
        user_hosts: bool,
    ) -> Self {
        NetPolicy {
            ext,
            manifest,
            user,
            user_hosts,
            fix_note: None,
        }
    }

    /// A policy that grants exactly `hosts`, chosen by the user outside
    /// the `network` settings; `fix` says what would allow another host.
    pub fn granted(ext: ExtensionId, hosts: Vec<HostPattern>, fix: String) -> Self {
        NetPolicy {
            ext,
            manifest: Vec::new(),
            user: hosts,
            user_hosts: true,
            fix_note: Some(fix),
        }
    }

    fn patterns(&self) -> impl Iterator<Item = &HostPattern> {
        let user: &[HostPattern] = if self.user_hosts { &self.user } else { &[] };
        self.manifest.iter().chain(user)
    }

    /// What the user can do to allow `host`.
    pub fn fix(&self, host: &str) -> String {
        if let Some(note) = &self.fix_note {
            note.clone()
        } else if self.user_hosts {
            format!(
                "to allow it, add \"{host}\" to `network.{}` in settings.json",
                self.ext
            )
        } else {
            "its manifest does not ask for this host ([capabilities] network) and it does not accept hosts granted in settings (`user-hosts`); ask its author, or use an extension that does".to_string()
        }
    }

    /// Scheme and host check of one URL (the first request and every
    /// redirect).
    pub fn check(&self, url: &Url) -> Result<(), NetDenied> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(NetDenied::Scheme {
                ext: self.ext.clone(),
                url: without_query(url),
            });
        }
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(0);
        if self.patterns().any(|p| p.matches(host, port)) {
            // An address written in the URL is never looked up, so the
            // internal-address rule applies here, not in the resolver.
            if let Ok(ip) = bare(host).parse::<IpAddr>()
                && is_internal(ip)
                && !self.exact(host)
            {
                return Err(NetDenied::Internal {
                    ext: self.ext.clone(),
                    fix: self.fix(bare(host)),
                    host: bare(host).to_string(),
                    addr: ip,
                });
            }
            Ok(())
        } else {
            let host = bare(host);
            Err(NetDenied::NotGranted {
                ext: self.ext.clone(),
                fix: self.fix(host),
                host: host.to_string(),
                port,
            })
        }
    }

    /// Whether the *user* granted `host` by name (not by wildcard): only
    /// then may it be (or resolve to) an internal address. A manifest's
    /// word is not enough: an extension could name `localhost` or a name
    /// that resolves to the cloud metadata address.
    pub fn exact(&self, host: &str) -> bool {
        let host = bare(host);
        self.user_hosts
            && self
                .user
                .iter()
                .any(|p| !p.wildcard && p.host.eq_ignore_ascii_case(host))
    }
}

fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// A URL fit for messages: no query (it may carry a key), no user info.
pub fn without_query(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(manifest: &[&str], user: &[&str], user_hosts: bool) -> NetPolicy {
        NetPolicy::new(
            "x".parse().unwrap(),
            manifest.iter().map(|p| p.parse().unwrap()).collect(),
            user.iter().map(|p| p.parse().unwrap()).collect(),
            user_hosts,
        )
    }

    fn url(s: &str) -> Url {
        s.parse().unwrap()
    }

    #[test]
    fn default_deny_and_manifest_grants() {
        let p = policy(&["api.example.com"], &[], false);
        assert!(p.check(&url("https://api.example.com/v1")).is_ok());
        let err = p.check(&url("https://evil.example/")).unwrap_err();
        assert!(
            matches!(err, NetDenied::NotGranted { ref host, port: 443, .. } if host == "evil.example")
        );
        assert!(err.to_string().contains("`x`"), "{err}");
        assert!(p.check(&url("file:///etc/passwd")).is_err());
    }

    #[test]
    fn user_grants_count_only_when_accepted() {
        let p = policy(&[], &["127.0.0.1"], false);
        assert!(p.check(&url("http://127.0.0.1:9/")).is_err());
        let p = policy(&[], &["127.0.0.1"], true);
        assert!(p.check(&url("http://127.0.0.1:9/")).is_ok());
        let err = p
            .check(&url("http://localhost:9/"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("network.x") && err.contains("localhost"),
            "{err}"
        );
    }

    #[test]
    fn only_exact_user_grants_reach_internal_addresses() {
        let p = policy(&["*.example.com", "host.lan", "127.0.0.1"], &[], true);
        assert!(p.check(&url("https://a.example.com/")).is_ok());
        assert!(!p.exact("a.example.com"));
        // The manifest's word is not enough.
        assert!(!p.exact("host.lan"));
        assert!(matches!(
            p.check(&url("http://127.0.0.1:9/")),
            Err(NetDenied::Internal { .. })
        ));
        let p = policy(&[], &["*.corp.lan", "HOST.lan", "127.0.0.1"], true);
        assert!(!p.exact("a.corp.lan"));
        assert!(p.exact("host.lan"));
        assert!(p.check(&url("http://127.0.0.1:9/")).is_ok());
        // Granted, but not accepted from settings by this manifest.
        let p = policy(&[], &["127.0.0.1"], false);
        assert!(!p.exact("127.0.0.1"));
    }

    #[test]
    fn messages_drop_queries() {
        assert_eq!(
            without_query(&url("https://u:p@h.example/x?key=secret")),
            "https://h.example/x"
        );
    }
}
