//! Network host patterns for the `network` capability. The pattern is the
//! whole grant, so parsing is strict: a host name, IP address or
//! `*.domain` wildcard, an optional port, and nothing else (no scheme,
//! path or user info that might suggest a narrower grant than it is).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use super::problems::quote;

/// A host (or `*.` suffix) the extension may connect to, optionally on
/// one port only.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct HostPattern {
    /// Lowercase host name or IP address; for a wildcard, the domain after
    /// `*.`. IPv6 addresses are stored without brackets.
    pub host: String,
    /// `None` allows any port.
    pub port: Option<u16>,
    /// `*.host`: any subdomain of `host`, at any depth, but not `host`
    /// itself.
    pub wildcard: bool,
}

/// Why a text is not a [`HostPattern`], with a corrected pattern when one
/// is obvious (scheme or path removed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a host pattern: {reason}; {}", quote(.value), fix(.suggestion.as_deref()))]
pub struct InvalidHostPattern {
    pub value: String,
    pub reason: String,
    pub suggestion: Option<String>,
}

fn fix(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(s) => format!("write \"{s}\" instead"),
        None => "write a host name, IP address or *.domain, with an optional port, e.g. \"api.example.com\", \"127.0.0.1:8080\" or \"*.example.com\"".to_string(),
    }
}

impl HostPattern {
    /// Whether a connection to `host:port` is covered. `host` is compared
    /// case-insensitively; IPv6 may be given with or without brackets.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        if self.wildcard {
            host.len() > self.host.len() + 1
                && host.ends_with(&self.host)
                && host.as_bytes().get(host.len() - self.host.len() - 1) == Some(&b'.')
        } else {
            host == self.host
        }
    }
}

impl FromStr for HostPattern {
    type Err = InvalidHostPattern;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s).map_err(|reason| InvalidHostPattern {
            value: s.to_string(),
            reason,
            suggestion: cleaned(s),
        })
    }
}

/// Read back from the form built into the binary
/// (`stud-bundled-manifests`): the pattern is the whole grant, so it is
/// parsed again, as when the manifest was read, never taken field by field.
impl TryFrom<String> for HostPattern {
    type Error = InvalidHostPattern;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<HostPattern> for String {
    fn from(pattern: HostPattern) -> String {
        pattern.to_string()
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

fn parse(s: &str) -> Result<HostPattern, String> {
    if s.is_empty() {
        return Err("it is empty".into());
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains spaces or control characters".into());
    }
    if let Some((scheme, _)) = s.split_once("://") {
        return Err(format!("it has a `{}://` scheme", quote_short(scheme)));
    }
    if s.contains('/') || s.contains('?') || s.contains('#') {
        return Err("it has a path or query".into());
    }
    if s.contains('@') {
        return Err("it has user info".into());
    }
    let (host, port) = split_port(s)?;
    if host.starts_with('[') {
        let inner = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or_default();
        let ip: Ipv6Addr = inner
            .parse()
            .map_err(|_| "the part in brackets is not an IPv6 address".to_string())?;
        return Ok(HostPattern {
            host: ip.to_string(),
            port,
            wildcard: false,
        });
    }
    let (wildcard, host) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    if host.contains('*') {
        return Err(if host == "*" {
            "a lone `*` would allow every host".into()
        } else {
            "`*` may only be the whole first label".into()
        });
    }
    if host.is_empty() {
        return Err("a lone `*` would allow every host".into());
    }
    let host = host.to_ascii_lowercase();
    if host.ends_with('.') {
        return Err("it ends with a dot".into());
    }
    let labels: Vec<&str> = host.split('.').collect();
    if labels
        .iter()
        .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
    {
        if wildcard {
            return Err("`*.` cannot be combined with an IP address".into());
        }
        let ip: Ipv4Addr = host
            .parse()
            .map_err(|_| "it looks like an IPv4 address but is not one".to_string())?;
        return Ok(HostPattern {
            host: ip.to_string(),
            port,
            wildcard,
        });
    }
    if host.len() > 253 {
        return Err("the host name is longer than 253 characters".into());
    }
    for label in &labels {
        if label.is_empty() || label.len() > 63 {
            return Err("each dot-separated label must have 1 to 63 characters".into());
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err("host names may only contain letters, digits, dashes and dots (use punycode for non-ASCII names)".into());
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a label cannot start or end with a dash".into());
        }
    }
    if wildcard && labels.len() < 2 {
        return Err("a wildcard over a single label (a top-level domain) is too broad".into());
    }
    Ok(HostPattern {
        host,
        port,
        wildcard,
    })
}

/// Splits `host[:port]` and `[v6][:port]`.
fn split_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if s.starts_with('[') {
        match s.find(']') {
            Some(end) => {
                let (host, rest) = s.split_at(end + 1);
                match rest.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None if rest.is_empty() => (host, None),
                    None => return Err("unexpected text after `]`".into()),
                }
            }
            None => return Err("`[` without a closing `]`".into()),
        }
    } else if s.matches(':').count() > 1 {
        return Err("an IPv6 address must be in brackets, as in \"[::1]:8080\"".into());
    } else {
        match s.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (s, None),
        }
    };
    let port = match port {
        None => None,
        Some(text) => match text.parse::<u16>() {
            Ok(p) if p > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Some(p),
            _ => {
                return Err(format!(
                    "the port {} is not a number from 1 to 65535",
                    quote(text)
                ));
            }
        },
    };
    Ok((host, port))
}

/// The pattern hidden in a URL-like entry (`https://host:port/path`), if
/// removing the extras leaves a valid one.
fn cleaned(s: &str) -> Option<String> {
    let rest = s.trim();
    let rest = rest.split_once("://").map_or(rest, |(_, r)| r);
    let rest = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let rest = rest.strip_suffix('.').unwrap_or(rest);
    if rest == s || rest.is_empty() {
        return None;
    }
    parse(rest).ok().map(|p| p.to_string())
}

fn quote_short(text: &str) -> String {
    text.chars().take(16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde form is the pattern's text, parsed on the way in: a
    /// grant read back cannot be wider or stranger than one a manifest
    /// could declare.
    #[test]
    fn a_pattern_read_back_is_parsed_again() {
        for text in [
            "*.example.com:443",
            "127.0.0.1:8080",
            "[::1]:9000",
            "api.example.com",
        ] {
            let p = pat(text);
            let json = serde_json::to_string(&p).expect("serializes");
            assert_eq!(
                serde_json::from_str::<HostPattern>(&json).expect("reads back"),
                p
            );
        }
        let fields = r#"{"host":"evil.example.com/path","port":null,"wildcard":false}"#;
        assert!(
            serde_json::from_str::<HostPattern>(fields).is_err(),
            "fields are not a pattern"
        );
        for wide in [
            r#""https://evil.example.com/""#,
            r#""*""#,
            r#""*.com:0""#,
            r#""""#,
        ] {
            assert!(serde_json::from_str::<HostPattern>(wide).is_err(), "{wide}");
        }
    }

    fn pat(s: &str) -> HostPattern {
        match s.parse() {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn parses_and_displays() {
        for (text, shown) in [
            ("api.openai.com", "api.openai.com"),
            ("API.OpenAI.com", "api.openai.com"),
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("*.example.com", "*.example.com"),
            ("localhost:11434", "localhost:11434"),
            ("[::1]:8080", "[::1]:8080"),
            ("[0:0::1]", "[::1]"),
        ] {
            assert_eq!(pat(text).to_string(), shown);
        }
        let p = pat("localhost:11434");
        assert_eq!(
            (p.host.as_str(), p.port, p.wildcard),
            ("localhost", Some(11434), false)
        );
    }

    #[test]
    fn rejects_broad_or_confusing_patterns() {
        for bad in [
            "",
            " ",
            "api.example.com ",
            "https://api.example.com",
            "api.example.com/v1",
            "user@api.example.com",
            "*",
            "*.",
            "*:80",
            "api.*.com",
            "a*.example.com",
            "*.*.example.com",
            "*.com",
            "example.com.",
            "a..b",
            "-a.com",
            "a_b.com",
            "host:0",
            "host:65536",
            "host:",
            "host:+80",
            "::1",
            "[::1",
            "[zz]",
            "999.1.1.1",
            "*.10.0.0.1",
        ] {
            assert!(
                bad.parse::<HostPattern>().is_err(),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn wildcard_matches_subdomains_not_apex() {
        let p = pat("*.example.com");
        assert!(p.matches("a.example.com", 443));
        assert!(p.matches("a.b.example.com", 80));
        assert!(p.matches("A.Example.COM", 80));
        assert!(!p.matches("example.com", 443));
        assert!(!p.matches("badexample.com", 443));
        assert!(!p.matches("a.example.com.evil.net", 443));
        assert!(!p.matches(".example.com", 443));
    }

    #[test]
    fn ports_and_exact_hosts() {
        let any = pat("api.openai.com");
        assert!(any.matches("api.openai.com", 443));
        assert!(any.matches("api.openai.com", 8443));
        assert!(!any.matches("openai.com", 443));
        let one = pat("127.0.0.1:8080");
        assert!(one.matches("127.0.0.1", 8080));
        assert!(!one.matches("127.0.0.1", 8081));
        assert!(pat("[::1]:8080").matches("[::1]", 8080));
        assert!(pat("[::1]").matches("::1", 1));
    }
}
