//! The Model Context Protocol client side: which servers are configured,
//! which the user trusts. The kernel owns the connections (like the
//! `http` capability); what a server offers enters through the same
//! authority stack, events and limits as stud's own tools.

pub mod client;
mod config;
mod env_power;
pub mod http;
pub mod link;
pub mod oauth;
pub mod serve;
pub mod serve_http;
pub mod tool;
mod trust;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use config::{
    ConfigError, McpScope, McpServer, Template, Transport, parse_servers, valid_server_id,
};
pub use trust::{McpTrust, McpTrustEntry, McpTrustError, McpTrustStatus};

use crate::extensions::ProjectScope;
use crate::paths::StudHome;

/// The project file users already keep next to their code.
pub const PROJECT_FILE: &str = ".mcp.json";

/// Every configured server, the later scope replacing an earlier entry of
/// the same id (project over global); `{"disable": true}` drops one.
#[derive(Debug, Default)]
pub struct McpServers {
    pub servers: Vec<McpServer>,
    pub errors: Vec<ConfigError>,
    /// Files that were not read, and why (an untrusted project).
    pub notes: Vec<String>,
}

impl McpServers {
    pub fn server(&self, id: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.id == id)
    }

    /// Global `mcpServers`, then (in a trusted project) `.mcp.json` and the
    /// project's `mcpServers`.
    pub fn discover(home: &StudHome, project: &ProjectScope, cwd: &Path) -> Self {
        let mut found = McpServers::default();
        found.read(&home.settings_file(), &McpScope::Global);
        let mcp_json = cwd.join(PROJECT_FILE);
        match project {
            ProjectScope::Trusted(stud_dir) => {
                let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
                let scope = McpScope::Project(root);
                found.read(&mcp_json, &scope);
                found.read(&stud_dir.join("settings.json"), &scope);
            }
            ProjectScope::Untrusted(_) | ProjectScope::Changed(_) if mcp_json.is_file() => {
                found.notes.push(format!(
                    "{} was not read: this project is not trusted (`stud trust grant`)",
                    mcp_json.display()
                ));
            }
            ProjectScope::None if mcp_json.is_file() => {
                found.notes.push(format!(
                    "{} was not read: project files are read only in a trusted project (create .stud/ and run `stud trust grant`)",
                    mcp_json.display()
                ));
            }
            _ => {}
        }
        found
    }

    /// Add the servers an editor passed; they replace configured ones of
    /// the same id (the editor's choice for this session is the latest).
    pub fn add(&mut self, servers: &[McpServer]) {
        for s in servers {
            self.servers.retain(|old| old.id != s.id);
            self.servers.push(s.clone());
        }
        self.servers.sort_by(|a, b| a.id.cmp(&b.id));
    }

    fn read(&mut self, file: &Path, scope: &McpScope) {
        let Some(servers) = read_servers(file, &mut self.errors) else {
            return;
        };
        for (id, entry) in &servers {
            if entry.get("disable").and_then(Value::as_bool) == Some(true) {
                self.servers.retain(|s| s.id != *id);
            }
        }
        let (ok, errors) = parse_servers(&servers, scope, file);
        self.errors.extend(errors);
        for s in ok {
            self.servers.retain(|old| old.id != s.id);
            self.servers.push(s);
        }
        self.servers.sort_by(|a, b| a.id.cmp(&b.id));
    }
}

/// The `mcpServers` object of a file, if it has one.
fn read_servers(file: &Path, errors: &mut Vec<ConfigError>) -> Option<Map<String, Value>> {
    let text = std::fs::read_to_string(file).ok()?;
    let fail = |reason: String| ConfigError {
        server: String::new(),
        file: file.to_path_buf(),
        field: "mcpServers".into(),
        reason,
    };
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            errors.push(fail(format!(
                "cannot be read: the file is not valid JSON ({e})"
            )));
            return None;
        }
    };
    match doc.get("mcpServers") {
        None => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            errors.push(fail("must be an object of server ids to entries".into()));
            None
        }
    }
}

/// Where `stud mcp add --project` writes.
pub fn project_file(cwd: &Path) -> PathBuf {
    cwd.join(PROJECT_FILE)
}
