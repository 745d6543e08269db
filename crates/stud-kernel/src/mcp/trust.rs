//! MCP trust: a server the user has not trusted is never started or
//! contacted. Decisions live in the global scope (`<stud home>/mcp-trust.json`,
//! never in a project, which could ship a pre-filled list), keyed by the
//! server id and the digest of its config ([`McpServer::digest`]): an
//! edited command, argument, URL or header asks again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::McpServer;

const TRUST_FILE: &str = "mcp-trust.json";

#[derive(Debug, thiserror::Error)]
pub enum McpTrustError {
    #[error("cannot read the MCP trust list {path}: {message}; fix or delete it")]
    Read { path: PathBuf, message: String },
    #[error("cannot write the MCP trust list {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTrustEntry {
    pub server: String,
    /// `global` or the project root.
    pub scope: String,
    pub digest: String,
    /// What was trusted, as shown to the user then.
    pub describe: String,
    /// Unix seconds.
    pub granted_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    servers: Vec<McpTrustEntry>,
}

/// What the list says of one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTrustStatus {
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but its config changed since: asked again.
    Changed,
}

impl McpTrustStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            McpTrustStatus::Trusted => "trusted",
            McpTrustStatus::Untrusted => "not trusted",
            McpTrustStatus::Changed => "changed since trusted",
        }
    }
}

pub struct McpTrust {
    path: PathBuf,
}

fn scope_key(server: &McpServer) -> String {
    match &server.scope {
        super::McpScope::Global => "global".into(),
        super::McpScope::Project(root) => root.display().to_string(),
        super::McpScope::Editor(root) => format!("editor:{}", root.display()),
    }
}

impl McpTrust {
    pub fn new(global_root: &Path) -> Self {
        McpTrust {
            path: global_root.join(TRUST_FILE),
        }
    }

    fn read(&self) -> Result<TrustFile, McpTrustError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| McpTrustError::Read {
                path: self.path.clone(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(e) => Err(McpTrustError::Read {
                path: self.path.clone(),
                message: e.to_string(),
            }),
        }
    }

    fn write(&self, file: &TrustFile) -> Result<(), McpTrustError> {
        let write = |source| McpTrustError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(file).map_err(|e| write(std::io::Error::other(e)))?;
        crate::atomic_write::write_atomic(&self.path, text.as_bytes()).map_err(write)
    }

    pub fn status(&self, server: &McpServer) -> Result<McpTrustStatus, McpTrustError> {
        let scope = scope_key(server);
        let file = self.read()?;
        let mine: Vec<&McpTrustEntry> = file
            .servers
            .iter()
            .filter(|e| e.server == server.id && e.scope == scope)
            .collect();
        Ok(if mine.iter().any(|e| e.digest == server.digest()) {
            McpTrustStatus::Trusted
        } else if mine.is_empty() {
            McpTrustStatus::Untrusted
        } else {
            McpTrustStatus::Changed
        })
    }

    /// Trust the server as configured now (replacing what was trusted for
    /// its id and scope before).
    pub fn grant(&self, server: &McpServer) -> Result<(), McpTrustError> {
        let scope = scope_key(server);
        let mut file = self.read()?;
        file.servers
            .retain(|e| !(e.server == server.id && e.scope == scope));
        file.servers.push(McpTrustEntry {
            server: server.id.clone(),
            scope,
            digest: server.digest(),
            describe: server.describe(),
            granted_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        });
        self.write(&file)
    }

    /// Forget every decision for `id` (in any scope); whether there was one.
    pub fn revoke(&self, id: &str) -> Result<bool, McpTrustError> {
        let mut file = self.read()?;
        let before = file.servers.len();
        file.servers.retain(|e| e.server != id);
        if file.servers.len() == before {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{McpScope, Transport};

    fn server(command: &str, scope: McpScope) -> McpServer {
        McpServer {
            id: "s".into(),
            scope,
            file: PathBuf::from("settings.json"),
            transport: Transport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: Default::default(),
            },
            trust_read_only_hints: false,
            start_timeout: None,
        }
    }

    #[test]
    fn an_edited_command_or_another_project_asks_again() {
        let home = tempfile::tempdir().unwrap();
        let trust = McpTrust::new(home.path());
        let one = server("srv", McpScope::Global);
        assert_eq!(trust.status(&one).unwrap(), McpTrustStatus::Untrusted);
        trust.grant(&one).unwrap();
        assert_eq!(trust.status(&one).unwrap(), McpTrustStatus::Trusted);
        let edited = server("srv --evil", McpScope::Global);
        assert_eq!(trust.status(&edited).unwrap(), McpTrustStatus::Changed);
        let elsewhere = server("srv", McpScope::Project(PathBuf::from("/repo")));
        assert_eq!(trust.status(&elsewhere).unwrap(), McpTrustStatus::Untrusted);
        assert!(trust.revoke("s").unwrap());
        assert_eq!(trust.status(&one).unwrap(), McpTrustStatus::Untrusted);
        assert!(!trust.revoke("s").unwrap());
    }

    #[test]
    fn a_broken_list_is_an_error_naming_it_not_trust() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(TRUST_FILE), "{not json").unwrap();
        let trust = McpTrust::new(home.path());
        let e = trust.status(&server("srv", McpScope::Global)).unwrap_err();
        assert!(e.to_string().contains("mcp-trust.json"), "{e}");
    }
}
