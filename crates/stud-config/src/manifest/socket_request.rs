//! One `sockets` entry of `[capabilities]` (contract 0.1.4): a host and a
//! port the extension may open a TCP connection to. `"db.example.com:5432"`
//! names the host (a `*.domain` wildcard too); `"*:5432"` means any host
//! the person grants it in their settings, on that port; `"*:*"` means only
//! the exact hosts and ports the person grants (a store on a database the
//! person names). A host the manifest names always comes with its port.

use std::fmt;
use std::str::FromStr;

use super::host_pattern::HostPattern;
use super::problems::quote;

#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SocketRequest {
    /// `None`: `*`, a host the person names.
    pub host: Option<HostPattern>,
    /// `None`: `*`, the port the person names with the host (only with a
    /// host the person names).
    pub port: Option<u16>,
}

impl SocketRequest {
    /// Whether a connection to `host:port` is within this request.
    pub fn covers(&self, host: &str, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
            && self.host.as_ref().is_none_or(|p| p.matches(host, port))
    }
}

/// Why a text is not a socket request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{value} is not a socket grant: {reason}; write a host and a port, e.g. \"db.example.com:5432\", or \"*:5432\" for a host the person grants"
)]
pub struct InvalidSocketRequest {
    pub value: String,
    pub reason: String,
}

impl FromStr for SocketRequest {
    type Err = InvalidSocketRequest;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| InvalidSocketRequest {
            value: quote(s).to_string(),
            reason,
        };
        if s == "*:*" {
            return Ok(SocketRequest {
                host: None,
                port: None,
            });
        }
        if let Some(port) = s.strip_prefix("*:") {
            let port = port
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| bad("the port is not a number from 1 to 65535".into()))?;
            return Ok(SocketRequest {
                host: None,
                port: Some(port),
            });
        }
        let pattern: HostPattern = s
            .parse()
            .map_err(|e: super::InvalidHostPattern| bad(e.reason))?;
        let port = pattern.port.ok_or_else(|| bad("it has no port".into()))?;
        Ok(SocketRequest {
            host: Some(pattern),
            port: Some(port),
        })
    }
}

/// Read back from the form built into the binary: parsed again, so a
/// named host never comes without its port.
impl TryFrom<String> for SocketRequest {
    type Error = InvalidSocketRequest;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<SocketRequest> for String {
    fn from(request: SocketRequest) -> String {
        request.to_string()
    }
}

impl fmt::Display for SocketRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Some(p) => write!(f, "{p}"),
            None => match self.port {
                Some(port) => write!(f, "*:{port}"),
                None => f.write_str("*:*"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read back from JSON, a grant is its text parsed again: the field
    /// form of a named host on any port is refused.
    #[test]
    fn a_socket_grant_read_back_is_parsed_again() {
        for text in ["db.example.com:5432", "*:5432", "*:*", "*.example.com:6543"] {
            let r: SocketRequest = text.parse().expect("parses");
            let json = serde_json::to_string(&r).expect("serializes");
            assert_eq!(
                serde_json::from_str::<SocketRequest>(&json).expect("reads back"),
                r
            );
        }
        let any_port = r#"{"host":"db.example.com","port":null}"#;
        assert!(serde_json::from_str::<SocketRequest>(any_port).is_err());
        assert!(serde_json::from_str::<SocketRequest>(r#""db.example.com""#).is_err());
    }

    #[test]
    fn a_socket_grant_is_a_host_and_a_port() {
        let exact: SocketRequest = "db.example.com:5432".parse().unwrap();
        assert!(exact.covers("DB.example.com", 5432));
        assert!(!exact.covers("db.example.com", 5433));
        assert!(!exact.covers("other.example.com", 5432));
        let any: SocketRequest = "*:5432".parse().unwrap();
        assert!(any.covers("10.0.0.5", 5432) && !any.covers("10.0.0.5", 22));
        assert_eq!(any.to_string(), "*:5432");
        // Only what the person grants, on whatever port they name.
        let granted: SocketRequest = "*:*".parse().unwrap();
        assert!(granted.covers("10.0.0.5", 6543) && granted.host.is_none());
        assert_eq!(granted.to_string(), "*:*");
        for bad in [
            "db.example.com",
            "*:0",
            "*:x",
            "postgres://db:5432",
            "*",
            "db.example.com:*",
        ] {
            let e = bad.parse::<SocketRequest>().unwrap_err().to_string();
            assert!(e.contains("is not a socket grant"), "{bad}: {e}");
        }
    }
}
