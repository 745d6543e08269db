//! A connection to one MCP server, over stdio or streamable HTTP. For
//! stdio the kernel starts the server itself rather than letting a library
//! do it, because what the child gets is a security decision: the project
//! as its working directory, a reduced environment plus its configured
//! `env` (a server never sees the user's provider keys unless its entry
//! passes them), stderr to a log file (never the screen), its own process
//! group, killed with the connection. For HTTP the requests go through the
//! kernel's policy-bound client ([`super::http`]). MCP itself is spoken by
//! `rmcp`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Tool,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::process::{Child, Command};

use super::config::{McpServer, Transport};
use super::http::McpHttp;

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
        "MCP server `{server}` did not start within {} ms ({where_})",
        timeout.as_millis()
    )]
    Timeout {
        server: String,
        timeout: Duration,
        /// Where to look: the stderr log, or the URL.
        where_: String,
    },
    #[error("MCP server `{server}` failed to start: {reason} ({where_})")]
    Handshake {
        server: String,
        reason: String,
        where_: String,
    },
    #[error(
        "MCP server `{server}` needs a login{}: run `stud mcp login {server}`",
        if *.expired { " (the kept one expired or was refused)" } else { "" }
    )]
    NeedsLogin { server: String, expired: bool },
    #[error("MCP server `{server}`: `{field}` {reason}; change the entry in {}", file.display())]
    Entry {
        server: String,
        field: String,
        reason: String,
        file: PathBuf,
    },
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

/// Asks the person what an elicitation wants (its message and requested
/// schema); `None` declines (a headless run, a refusal).
pub type Elicitor = Arc<
    dyn Fn(
            String,
            serde_json::Value,
        ) -> futures::future::BoxFuture<'static, Option<serde_json::Value>>
        + Send
        + Sync,
>;

/// What stud's client offers a server besides calls: its roots (the
/// project folder, as `file://` URIs) and, with a person to ask, answers
/// to elicitation requests.
#[derive(Clone, Default)]
pub struct ClientSide {
    pub roots: Vec<String>,
    pub elicit: Option<Elicitor>,
    /// The stud home, where `stud mcp login` keeps tokens; none sends
    /// no token.
    pub logins: Option<PathBuf>,
}

impl ClientSide {
    /// The project folder as the one root; no one to ask.
    pub fn for_project(cwd: &Path) -> Self {
        let dir = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        ClientSide {
            roots: vec![format!("file://{}", dir.display())],
            elicit: None,
            logins: None,
        }
    }
}

/// What a server told the client on its own (its tool list changed; read
/// and cleared by the kernel at the next stage boundary), and what the
/// client answers a server's requests with.
#[derive(Clone, Default)]
pub struct Notices {
    tools_changed: Arc<AtomicBool>,
    side: ClientSide,
}

impl Notices {
    /// True once since the last call when the server said its tools
    /// changed.
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::AcqRel)
    }
}

impl ClientHandler for Notices {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::Release);
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = rmcp::model::ClientCapabilities::default();
        #[allow(deprecated)]
        {
            caps.roots = Some(rmcp::model::RootsCapabilities::default());
        }
        // Form elicitation: asked through the person's UI, declined when
        // there is no one to ask.
        let mut elicitation = rmcp::model::ElicitationCapability::new();
        elicitation.form = Some(Default::default());
        caps.elicitation = Some(elicitation);
        rmcp::model::ClientConfig::new(
            caps,
            rmcp::model::Implementation::new("stud", env!("CARGO_PKG_VERSION")),
        )
    }

    // Roots are deprecated in a protocol draft (SEP-2577) but are what
    // servers ask for today.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::model::ErrorData> {
        Ok(rmcp::model::ListRootsResult::new(
            self.side
                .roots
                .iter()
                .map(|uri| rmcp::model::Root::new(uri.clone()))
                .collect(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let (
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            },
            Some(elicit),
        ) = (request, self.side.elicit.as_ref())
        else {
            return Ok(decline);
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        Ok(match elicit(message, schema).await {
            Some(answer @ serde_json::Value::Object(_)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(answer)
            }
            _ => decline,
        })
    }
}

/// A running server and the MCP session with it. Dropping it ends both.
pub struct McpConnection {
    pub server: String,
    /// The server's own name and version, as it said at `initialize`.
    pub server_info: String,
    pub notices: Notices,
    service: RunningService<RoleClient, Notices>,
    /// The stdio server's process; none for HTTP.
    child: Option<Child>,
}

/// Connect to `server` and complete the MCP handshake within `timeout`:
/// a stdio server is started in `cwd` with its stderr in `stderr_log`.
pub async fn connect(
    server: &McpServer,
    cwd: &Path,
    stderr_log: &Path,
    timeout: Duration,
    lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    side: &ClientSide,
) -> Result<McpConnection, ConnectError> {
    let notices = Notices {
        side: side.clone(),
        ..Notices::default()
    };
    let (handshake, mut child, where_) = match &server.transport {
        Transport::Stdio { command, args, env } => {
            let mut child = spawn(server, command, args, env, cwd, stderr_log, lookup)?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                kill_group(&mut child);
                return Err(ConnectError::Spawn {
                    server: server.id.clone(),
                    command: command.clone(),
                    reason: std::io::Error::other("no stdio pipes"),
                });
            };
            let handshake =
                tokio::time::timeout(timeout, notices.clone().serve((stdout, stdin))).await;
            let where_ = format!("its stderr is in {}", stderr_log.display());
            (handshake, Some(child), where_)
        }
        Transport::Http { url, headers } => {
            let (client, parsed, config) = http_transport(server, url, headers, lookup)?;
            let challenged = client.challenged();
            let store = side
                .logins
                .as_deref()
                .map(|home| super::oauth::TokenStore::new(home, &server.id, url));
            let had_login = store.as_ref().is_some_and(|s| s.exists());
            let authorized = match store {
                Some(store) => super::oauth::authorized(client.clone(), &parsed, store)
                    .await
                    .map_err(|reason| ConnectError::Handshake {
                        server: server.id.clone(),
                        reason,
                        where_: format!("at {url}"),
                    })?,
                None => None,
            };
            let handshake = match authorized {
                Some(auth) => {
                    let t = StreamableHttpClientTransport::with_client(auth, config);
                    tokio::time::timeout(timeout, notices.clone().serve(t)).await
                }
                None => {
                    let t = StreamableHttpClientTransport::with_client(client, config);
                    tokio::time::timeout(timeout, notices.clone().serve(t)).await
                }
            };
            if matches!(handshake, Ok(Err(_))) && challenged.load(Ordering::Acquire) {
                return Err(ConnectError::NeedsLogin {
                    server: server.id.clone(),
                    expired: had_login,
                });
            }
            (handshake, None, format!("at {url}"))
        }
    };
    let service = match handshake {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            if let Some(c) = child.as_mut() {
                kill_group(c);
            }
            return Err(ConnectError::Handshake {
                server: server.id.clone(),
                reason: e.to_string(),
                where_,
            });
        }
        Err(_) => {
            if let Some(c) = child.as_mut() {
                kill_group(c);
            }
            return Err(ConnectError::Timeout {
                server: server.id.clone(),
                timeout,
                where_,
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
        notices,
        service,
        child,
    })
}

/// The child for a stdio server: project cwd, reduced environment plus its
/// `env`, stderr to the log, its own process group.
fn spawn(
    server: &McpServer,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, super::Template>,
    cwd: &Path,
    stderr_log: &Path,
    lookup: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Child, ConnectError> {
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
    cmd.spawn().map_err(|reason| ConnectError::Spawn {
        server: server.id.clone(),
        command: command.to_string(),
        reason,
    })
}

/// The streamable HTTP client and transport settings for `url`, its
/// headers resolved (a missing variable is an error naming the header).
fn http_transport(
    server: &McpServer,
    url: &str,
    headers: &std::collections::BTreeMap<String, super::Template>,
    lookup: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<(McpHttp, reqwest::Url, StreamableHttpClientTransportConfig), ConnectError> {
    let entry = |field: &str, reason: String| ConnectError::Entry {
        server: server.id.clone(),
        field: field.to_string(),
        reason,
        file: server.file.clone(),
    };
    let parsed =
        reqwest::Url::parse(url).map_err(|e| entry("url", format!("is not a URL ({e})")))?;
    let client = McpHttp::new(&server.id, &parsed).map_err(|e| entry("url", e))?;
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let field = format!("headers.{name}");
        let v = value
            .resolve(lookup)
            .map_err(|var| ConnectError::MissingVariable {
                server: server.id.clone(),
                field: field.clone(),
                var,
                file: server.file.clone(),
            })?;
        let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| entry(&field, "is not a valid header name".into()))?;
        let v = reqwest::header::HeaderValue::from_str(&v)
            .map_err(|_| entry(&field, "has a value that cannot be sent in a header".into()))?;
        custom.insert(n, v);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok((client, parsed, config))
}

impl McpConnection {
    /// Every tool the server offers (all pages).
    pub async fn tools(&self) -> Result<Vec<Tool>, CallError> {
        self.service
            .list_all_tools()
            .await
            .map_err(|e| self.failed("(tools/list)", e))
    }

    /// Every prompt the server offers (none when it has no prompts).
    pub async fn prompts(&self) -> Result<Vec<Prompt>, CallError> {
        let offers = self
            .service
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_some());
        if !offers {
            return Ok(Vec::new());
        }
        self.service
            .list_all_prompts()
            .await
            .map_err(|e| self.failed("(prompts/list)", e))
    }

    /// The messages of prompt `name` with `arguments`.
    pub async fn prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, CallError> {
        let mut params = GetPromptRequestParams::new(name.to_string());
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        self.service
            .get_prompt(params)
            .await
            .map_err(|e| self.failed(&format!("(prompt {name})"), e))
    }

    /// The contents of resource `uri`.
    pub async fn read(&self, uri: &str) -> Result<ReadResourceResult, CallError> {
        self.service
            .read_resource(ReadResourceRequestParams::new(uri.to_string()))
            .await
            .map_err(|e| self.failed(&format!("(resource {uri})"), e))
    }

    fn failed(&self, what: &str, e: rmcp::ServiceError) -> CallError {
        match e {
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => {
                CallError::Lost {
                    server: self.server.clone(),
                    reason: e.to_string(),
                }
            }
            other => CallError::Failed {
                server: self.server.clone(),
                tool: what.into(),
                reason: other.to_string(),
            },
        }
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
        self.service
            .call_tool(params)
            .await
            .map_err(|e| self.failed(tool, e))
    }

    /// The session with the server is over (it exited, its pipe closed).
    pub fn is_lost(&self) -> bool {
        self.service.is_transport_closed()
    }

    /// The child's process id (tests prove it ends with the connection).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// End the MCP session and the server.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.service.close()).await;
        if let Some(child) = self.child.as_mut() {
            kill_group(child);
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            kill_group(child);
        }
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
