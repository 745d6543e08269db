//! A connection to one MCP server over stdio. The kernel starts the server
//! itself rather than letting a library do it, because what the child
//! gets is a security decision: the project as its working directory, a
//! reduced environment plus its configured `env` (a server never sees the
//! user's provider keys unless its entry passes them), stderr to a log file
//! (never the screen), its own process group, killed with the connection.
//! MCP itself is spoken by `rmcp` over the child's stdin and stdout.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value};
use tokio::process::{Child, Command};

use super::config::{McpServer, Transport};

/// How long a server may take to start and answer `initialize` (npx may
/// download the package the first time).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Variables a server gets from stud's own environment; everything else
/// it needs comes from its `env` entry.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
];

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "MCP server `{server}`: `{field}` references the variable {var}, which is not set; set it or change the entry in {}",
        file.display()
    )]
    MissingVariable {
        server: String,
        field: String,
        var: String,
        file: PathBuf,
    },
    #[error("MCP server `{server}`: cannot start `{command}`: {reason}")]
    Spawn {
        server: String,
        command: String,
        reason: std::io::Error,
    },
    #[error(
        "MCP server `{server}` did not start within {} s (its stderr is in {})",
        timeout.as_secs(),
        log.display()
    )]
    Timeout {
        server: String,
        timeout: Duration,
        log: PathBuf,
    },
    #[error("MCP server `{server}` failed to start: {reason} (its stderr is in {})", log.display())]
    Handshake {
        server: String,
        reason: String,
        log: PathBuf,
    },
    #[error(
        "MCP server `{server}` uses streamable HTTP, which stud cannot connect to yet (stdio servers work)"
    )]
    HttpNotYet { server: String },
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("MCP server `{server}`: tool `{tool}` failed: {reason}")]
    Failed {
        server: String,
        tool: String,
        reason: String,
    },
    #[error("MCP server `{server}`: the arguments for `{tool}` must be a JSON object")]
    Arguments { server: String, tool: String },
    /// The connection is gone (the server exited, its pipe closed).
    #[error("MCP server `{server}`: the connection was lost ({reason})")]
    Lost { server: String, reason: String },
}

/// A running server and the MCP session with it. Dropping it ends both.
pub struct McpConnection {
    pub server: String,
    /// The server's own name and version, as it said at `initialize`.
    pub server_info: String,
    service: RunningService<RoleClient, ()>,
    child: Child,
}

/// Start `server` (stdio) in `cwd` and complete the MCP handshake within
/// `timeout`. Its stderr goes to `stderr_log`.
pub async fn connect(
    server: &McpServer,
    cwd: &Path,
    stderr_log: &Path,
    timeout: Duration,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<McpConnection, ConnectError> {
    let Transport::Stdio { command, args, env } = &server.transport else {
        return Err(ConnectError::HttpNotYet {
            server: server.id.clone(),
        });
    };
    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    for name in PASSED_ENV {
        if let Some(v) = lookup(name) {
            cmd.env(name, v);
        }
    }
    for (name, value) in env {
        let v = value
            .resolve(lookup)
            .map_err(|var| ConnectError::MissingVariable {
                server: server.id.clone(),
                field: format!("env.{name}"),
                var,
                file: server.file.clone(),
            })?;
        cmd.env(name, v);
    }
    if let Some(dir) = stderr_log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::File::create(stderr_log) {
        Ok(f) => cmd.stderr(Stdio::from(f)),
        Err(_) => cmd.stderr(Stdio::null()),
    };
    // Its own group, so the whole tree (npx, node, ...) ends with it.
    #[cfg(unix)]
    cmd.process_group(0);
    let spawn_error = |reason| ConnectError::Spawn {
        server: server.id.clone(),
        command: command.clone(),
        reason,
    };
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        kill_group(&mut child);
        return Err(spawn_error(std::io::Error::other("no stdio pipes")));
    };
    let handshake = tokio::time::timeout(timeout, ().serve((stdout, stdin))).await;
    let service = match handshake {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            kill_group(&mut child);
            return Err(ConnectError::Handshake {
                server: server.id.clone(),
                reason: e.to_string(),
                log: stderr_log.to_path_buf(),
            });
        }
        Err(_) => {
            kill_group(&mut child);
            return Err(ConnectError::Timeout {
                server: server.id.clone(),
                timeout,
                log: stderr_log.to_path_buf(),
            });
        }
    };
    let server_info = service
        .peer_info()
        .and_then(|i| {
            i.server_info
                .as_ref()
                .map(|s| format!("{} {}", s.name, s.version))
        })
        .unwrap_or_else(|| "(a server without a name)".into());
    Ok(McpConnection {
        server: server.id.clone(),
        server_info,
        service,
        child,
    })
}

impl McpConnection {
    /// Every tool the server offers (all pages).
    pub async fn tools(&self) -> Result<Vec<Tool>, CallError> {
        self.service
            .list_all_tools()
            .await
            .map_err(|e| CallError::Failed {
                server: self.server.clone(),
                tool: "(tools/list)".into(),
                reason: e.to_string(),
            })
    }

    /// Call `tool` with `arguments` (a JSON object).
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        let arguments: Option<Map<String, Value>> = match arguments {
            Value::Object(m) => Some(m),
            Value::Null => None,
            _ => {
                return Err(CallError::Arguments {
                    server: self.server.clone(),
                    tool: tool.into(),
                });
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        self.service.call_tool(params).await.map_err(|e| match e {
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => {
                CallError::Lost {
                    server: self.server.clone(),
                    reason: e.to_string(),
                }
            }
            other => CallError::Failed {
                server: self.server.clone(),
                tool: tool.into(),
                reason: other.to_string(),
            },
        })
    }

    /// The session with the server is over (it exited, its pipe closed).
    pub fn is_lost(&self) -> bool {
        self.service.is_transport_closed()
    }

    /// The child's process id (tests prove it ends with the connection).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// End the MCP session and the server.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.service.close()).await;
        kill_group(&mut self.child);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// Kill the server's process group (and the child itself).
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on the group of a child this process started
        // (its own group, made at spawn); a stale group id is harmless.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
        }
    }
    let _ = child.start_kill();
}

/// Where a server's stderr goes: `<stud home>/logs/mcp-<id>.log`.
pub fn stderr_log(home_root: &Path, server: &str) -> PathBuf {
    home_root.join("logs").join(format!("mcp-{server}.log"))
}

/// The environment of this process, for [`connect`]'s lookup.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
