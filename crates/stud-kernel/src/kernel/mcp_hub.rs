//! The MCP servers of a session. At start every trusted server is started
//! in parallel (each within its start timeout, so a slow or broken one
//! never holds the session past it) and its tools join the session's
//! tools as `mcp__<server>__<tool>`. A server the user has not trusted is
//! never started: an interactive session asks first (the answer is kept,
//! keyed by the server's config digest); a headless one skips it with a
//! notice. The hub remembers each server's state for `/mcp`, its prompts
//! (slash commands) and is where a reconnect or a changed tool list is
//! taken up. Connections end with the session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::Tool;
use serde_json::Value;

use super::events::Bus;
use super::interaction::{Answer, Interactions};
use crate::mcp::client::{self, McpConnection};
use crate::mcp::link::{self, LinkEvent, McpLink, Observer};
use crate::mcp::tool::{McpTool, clean_name, tool_name};
use crate::mcp::{McpServer, McpServers, McpTrust, McpTrustStatus, Transport};
use crate::paths::StudHome;
use crate::runtime::domain::ToolSpec;
use crate::runtime::domain::{InteractionKind, InteractionStatus};
use stud_protocol::events::KernelEvent;
use stud_protocol::session_view::McpServerView;

/// One of a server's prompts, offered as `/mcp__<server>__<prompt>`.
#[derive(Debug, Clone)]
pub struct PromptInfo {
    pub name: String,
    pub description: String,
    /// Argument names in declared order, and whether each is required.
    pub arguments: Vec<(String, bool)>,
}

impl PromptInfo {
    /// Its slash command: `/mcp__<server>__<prompt>`.
    pub fn command(&self, server: &str) -> String {
        format!("/mcp__{server}__{}", clean_name(&self.name))
    }

    /// Its arguments as a usage hint: `<required> [optional]`.
    pub fn hint(&self) -> String {
        self.arguments
            .iter()
            .map(|(n, required)| {
                if *required {
                    format!("<{n}>")
                } else {
                    format!("[{n}]")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Where one configured server stands.
#[derive(Clone)]
pub enum SlotState {
    Connected {
        link: Arc<McpLink>,
        info: String,
        tools: Vec<String>,
        prompts: Vec<PromptInfo>,
    },
    /// Being started (an interactive session does not wait for it; its
    /// tools join at the first stage boundary after it is up).
    Starting,
    Failed(String),
    /// Not started: not trusted (and not allowed when asked).
    NotStarted(String),
}

#[derive(Clone)]
pub struct Slot {
    pub server: McpServer,
    pub state: SlotState,
}

/// A server's start, under way.
type Starting = tokio::task::JoinHandle<(String, Result<Started, String>)>;

/// The session's servers.
#[derive(Default)]
pub struct McpHub {
    slots: Mutex<Vec<Slot>>,
    starting: Mutex<Vec<Starting>>,
    home: Option<StudHome>,
    cwd: PathBuf,
    bus: Option<Bus>,
    /// Roots and elicitation answers every connection offers.
    side: crate::mcp::client::ClientSide,
}

pub type NewTools = Vec<(Arc<McpTool>, ToolSpec)>;

impl McpHub {
    /// Every slot, for `/mcp` and the overview.
    pub fn slots(&self) -> Vec<Slot> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Each server for `read(overview)`.
    pub fn views(&self) -> Vec<McpServerView> {
        self.slots()
            .into_iter()
            .map(|s| {
                let (status, info, error, tools, prompts) = match s.state {
                    SlotState::Connected {
                        link,
                        info,
                        tools,
                        prompts,
                    } => (
                        if link.lost_now() {
                            "disconnected"
                        } else {
                            "connected"
                        },
                        Some(info),
                        None,
                        tools,
                        prompts.iter().map(|p| p.command(&s.server.id)).collect(),
                    ),
                    SlotState::Starting => ("starting", None, None, Vec::new(), Vec::new()),
                    SlotState::Failed(e) => ("failed", None, Some(e), Vec::new(), Vec::new()),
                    SlotState::NotStarted(e) => {
                        ("not started", None, Some(e), Vec::new(), Vec::new())
                    }
                };
                McpServerView {
                    id: s.server.id.clone(),
                    transport: match s.server.transport {
                        Transport::Stdio { .. } => "stdio".into(),
                        Transport::Http { .. } => "http".into(),
                    },
                    target: s.server.describe(),
                    scope: s.server.scope.as_str().into(),
                    status: status.into(),
                    info,
                    error,
                    tools,
                    prompts,
                }
            })
            .collect()
    }

    /// Start again every server that is not connected (failed at start,
    /// or found lost): `/mcp reconnect`. Tools of servers that come up
    /// join the session; the line says what happened to each.
    pub async fn reconnect_down(&self) -> (NewTools, String) {
        let mut tools = Vec::new();
        let mut lines = Vec::new();
        for s in self.slots() {
            let down = match &s.state {
                SlotState::Connected { link, .. } => link.lost_now(),
                SlotState::Failed(_) => true,
                SlotState::Starting | SlotState::NotStarted(_) => false,
            };
            if !down {
                continue;
            }
            match self.reconnect(&s.server.id).await {
                Ok(new) => {
                    tools.extend(new.unwrap_or_default());
                    lines.push(format!("MCP server `{}` reconnected", s.server.id));
                }
                Err(e) => lines.push(format!("MCP server `{}` still down: {e}", s.server.id)),
            }
        }
        (tools, lines.join("; "))
    }

    /// The link of a connected server.
    pub fn link(&self, server: &str) -> Option<Arc<McpLink>> {
        self.slots().into_iter().find_map(|s| match s.state {
            SlotState::Connected { link, .. } if s.server.id == server => Some(link),
            _ => None,
        })
    }

    /// The prompt `/mcp__<server>__<prompt>` names, if a connected server
    /// offers it.
    pub fn prompt(&self, command: &str) -> Option<(Arc<McpLink>, PromptInfo)> {
        let rest = command.strip_prefix("/mcp__")?;
        self.slots().into_iter().find_map(|s| match s.state {
            SlotState::Connected { link, prompts, .. } => {
                let name = rest.strip_prefix(&s.server.id)?.strip_prefix("__")?;
                prompts
                    .into_iter()
                    .find(|p| clean_name(&p.name) == name)
                    .map(|p| (link, p))
            }
            _ => None,
        })
    }

    fn set(&self, server: &str, state: SlotState) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = slots.iter_mut().find(|s| s.server.id == server) {
            s.state = state;
        }
    }

    /// Servers whose tool list changed since the last look (they said
    /// so): their link and tools listed again. Taken at a stage boundary,
    /// so it never reconnects a lost server (the next call does).
    pub async fn changed_tools(&self) -> Vec<(Arc<McpLink>, Vec<Tool>)> {
        let links: Vec<Arc<McpLink>> = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|s| match &s.state {
                SlotState::Connected { link, .. } => Some(link.clone()),
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        for link in links {
            let conn = link.current().await;
            if !conn.is_lost()
                && conn.notices.take_tools_changed()
                && let Ok(tools) = conn.tools().await
            {
                out.push((link, tools));
            }
        }
        out
    }

    /// Starts that have finished since the last look: each server's slot
    /// is set, and the tools of those that came up are returned (with one
    /// warning per problem).
    pub fn take_up_started(&self) -> (NewTools, Vec<String>) {
        let finished: Vec<Starting> = {
            let mut starting = self.starting.lock().unwrap_or_else(|p| p.into_inner());
            let (done, running) = std::mem::take(&mut *starting)
                .into_iter()
                .partition(|h| h.is_finished());
            *starting = running;
            done
        };
        let mut results = Vec::new();
        for h in finished {
            if let Some(Ok(r)) = futures::FutureExt::now_or_never(h) {
                results.push(r);
            }
        }
        self.take_up(results)
    }

    /// Wait for every start under way (each is bounded by its start
    /// timeout), then take them up: what a headless run does, since a
    /// script expects the tools in its first request.
    pub async fn settle(&self) -> (NewTools, Vec<String>) {
        let all: Vec<Starting> =
            std::mem::take(&mut *self.starting.lock().unwrap_or_else(|p| p.into_inner()));
        let results = futures::future::join_all(all)
            .await
            .into_iter()
            .filter_map(Result::ok)
            .collect();
        self.take_up(results)
    }

    fn take_up(&self, results: Vec<(String, Result<Started, String>)>) -> (NewTools, Vec<String>) {
        let mut tools = Vec::new();
        let mut warnings = Vec::new();
        for (server, r) in results {
            match r {
                Ok(st) => {
                    tools.extend(st.tools);
                    warnings.extend(st.warnings);
                    self.set(&server, st.state);
                }
                Err(e) => {
                    if let Some(bus) = &self.bus {
                        bus.record(KernelEvent::McpFailed {
                            server: server.clone(),
                            error: e.clone(),
                        });
                    }
                    warnings.push(e.clone());
                    self.set(&server, SlotState::Failed(e));
                }
            }
        }
        (tools, warnings)
    }

    /// Record the new tool names of `server` (after a change).
    pub fn set_tools(&self, server: &str, names: Vec<String>) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Slot {
            state: SlotState::Connected { tools, .. },
            ..
        }) = slots.iter_mut().find(|s| s.server.id == server)
        {
            *tools = names;
        }
    }

    /// Start `server`, left out as untrusted, now that it is trusted;
    /// its tools, to join the session.
    pub async fn start_trusted(&self, server: &str) -> Result<NewTools, String> {
        let slot = self
            .slots()
            .into_iter()
            .find(|s| s.server.id == server)
            .ok_or_else(|| format!("no MCP server `{server}` is configured"))?;
        if !matches!(slot.state, SlotState::NotStarted(_)) {
            return Err(format!("MCP server `{server}` was started already"));
        }
        self.start_slot(&slot).await
    }

    /// Start `server` again (`/mcp reconnect`): a connected one gets a new
    /// connection, a failed one a new start. Returns its tools when it was
    /// not connected before (they join the session), and what happened.
    pub async fn reconnect(&self, server: &str) -> Result<Option<NewTools>, String> {
        let slot = self
            .slots()
            .into_iter()
            .find(|s| s.server.id == server)
            .ok_or_else(|| format!("no MCP server `{server}` is configured"))?;
        match slot.state {
            SlotState::Connected { link, .. } => {
                link.restart().await.map_err(|e| e.to_string())?;
                Ok(None)
            }
            SlotState::NotStarted(why) => Err(why),
            SlotState::Starting => Err(format!("MCP server `{server}` is still starting")),
            SlotState::Failed(_) => self.start_slot(&slot).await.map(Some),
        }
    }

    /// Start `slot`'s server now; its state follows what happened.
    async fn start_slot(&self, slot: &Slot) -> Result<NewTools, String> {
        let (Some(home), Some(bus)) = (&self.home, &self.bus) else {
            return Err("this session has no MCP servers".into());
        };
        let id = &slot.server.id;
        match one(home, &slot.server, &self.cwd, bus, &self.side).await {
            Ok(started) => {
                self.set(id, started.state.clone());
                Ok(started.tools)
            }
            Err(e) => {
                self.set(id, SlotState::Failed(e.clone()));
                Err(e)
            }
        }
    }
}

/// Starts still under way end with the session (a task holding a child
/// would otherwise go on, and retry, after `/clear`).
impl Drop for McpHub {
    fn drop(&mut self) {
        for h in self
            .starting
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            h.abort();
        }
    }
}

/// Start the session's servers (`McpServers::discover`, and an editor's),
/// each in a task of its own: the hub (its starts under way) and one
/// warning per problem found before starting (a bad entry, an untrusted
/// server). `ask` is set in an interactive
/// session: an untrusted server is asked about instead of skipped.
pub async fn start(
    home: &StudHome,
    servers: McpServers,
    cwd: &Path,
    bus: &Bus,
    ask: Option<&Arc<Interactions>>,
) -> (McpHub, Vec<String>) {
    let mut side = client_side(cwd, ask);
    side.logins = Some(home.root().to_path_buf());
    let ask = ask.map(|a| a.as_ref());
    let mut warnings: Vec<String> = servers.errors.iter().map(ToString::to_string).collect();
    warnings.extend(servers.notes.iter().cloned());
    let trust = McpTrust::new(home.root());
    let mut slots = Vec::new();
    let mut to_start = Vec::new();
    for s in &servers.servers {
        let status = match trust.status(s) {
            Ok(status) => status,
            Err(e) => {
                warnings.push(e.to_string());
                slots.push(Slot {
                    server: s.clone(),
                    state: SlotState::NotStarted(e.to_string()),
                });
                continue;
            }
        };
        let allowed = match status {
            McpTrustStatus::Trusted => true,
            // An editor's server is asked about in the editor once the
            // session is open there (`start_trusted`); it cannot be asked
            // before the editor knows the session.
            _ if matches!(s.scope, crate::mcp::McpScope::Editor(_)) => false,
            _ => match ask {
                Some(i) if !i.is_headless() => ask_trust(i, &trust, s, &status).await,
                _ => false,
            },
        };
        if allowed {
            to_start.push(s.clone());
            continue;
        }
        let why = format!(
            "MCP server `{}` ({}) was not started: it is {}; `stud mcp trust {}` trusts it as configured now",
            s.id,
            s.describe(),
            status.as_str(),
            s.id
        );
        warnings.push(why.clone());
        slots.push(Slot {
            server: s.clone(),
            state: SlotState::NotStarted(why),
        });
    }
    // An interactive session retries a failed start in the background
    // (the backoff of a reconnection); a headless run, which waits, does
    // not.
    let retry = ask.is_some_and(|i| !i.is_headless());
    let mut starting = Vec::new();
    for server in to_start {
        let (home, cwd, bus) = (home.clone(), cwd.to_path_buf(), bus.clone());
        let side = side.clone();
        slots.push(Slot {
            server: server.clone(),
            state: SlotState::Starting,
        });
        starting.push(tokio::spawn(async move {
            let mut r = one(&home, &server, &cwd, &bus, &side).await;
            let mut attempt = 0;
            while r.is_err() && retry && attempt < link::ATTEMPTS {
                attempt += 1;
                let wait = link::backoff(attempt);
                bus.record(KernelEvent::McpReconnectAttempt {
                    server: server.id.clone(),
                    attempt,
                    delay_ms: wait.as_millis() as u64,
                });
                tokio::time::sleep(wait).await;
                r = one(&home, &server, &cwd, &bus, &side).await;
            }
            (server.id, r)
        }));
    }
    slots.sort_by(|a, b| a.server.id.cmp(&b.server.id));
    let hub = McpHub {
        slots: Mutex::new(slots),
        starting: Mutex::new(starting),
        home: Some(home.clone()),
        cwd: cwd.to_path_buf(),
        bus: Some(bus.clone()),
        side,
    };
    (hub, warnings)
}

/// The project folder as the servers' root, and elicitations put to the
/// person: the server's message and the fields it asks for, answered as a
/// JSON object (anything else, or no one to ask, declines).
fn client_side(cwd: &Path, ask: Option<&Arc<Interactions>>) -> crate::mcp::client::ClientSide {
    let mut side = crate::mcp::client::ClientSide::for_project(cwd);
    if let Some(i) = ask.filter(|i| !i.is_headless()).cloned() {
        side.elicit = Some(Arc::new(move |message: String, schema: Value| {
            let i = i.clone();
            Box::pin(async move {
                let fields = schema
                    .get("properties")
                    .map(|p| p.to_string())
                    .unwrap_or_default();
                let question = format!(
                    "An MCP server asks: {message}\nAnswer with a JSON object of these fields (empty to decline): {fields}"
                );
                match i
                    .request(crate::runtime::domain::InteractionKind::Ask(question))
                    .await
                {
                    Answer::Response(r)
                        if r.status == crate::runtime::domain::InteractionStatus::Accepted =>
                    {
                        r.value.and_then(|v| serde_json::from_str::<Value>(&v).ok())
                    }
                    _ => None,
                }
            }) as futures::future::BoxFuture<'static, Option<Value>>
        }));
    }
    side
}

/// What the person is asked before a server not trusted yet starts: what
/// runs (a project's values in full), one line per variable that changes
/// which code runs, and the file it came from.
pub fn trust_question(s: &McpServer, status: &McpTrustStatus) -> String {
    let what = match &s.transport {
        Transport::Stdio { .. } => "run this command as you, in this project",
        Transport::Http { .. } => "connect to this URL",
    };
    let warnings: String = s.warnings().iter().map(|w| format!("\n  ! {w}")).collect();
    format!(
        "MCP server `{}` is {} ({} scope). Trust it and {what}?\n  {}{warnings}\nfrom {}",
        s.id,
        status.as_str(),
        s.scope.as_str(),
        s.describe(),
        s.file.display()
    )
}

/// Ask the person whether to start a server not trusted yet; a yes is
/// kept (`stud mcp revoke` takes it back).
async fn ask_trust(
    i: &Interactions,
    trust: &McpTrust,
    s: &McpServer,
    status: &McpTrustStatus,
) -> bool {
    match i
        .request(InteractionKind::Confirm(trust_question(s, status)))
        .await
    {
        Answer::Response(r) if r.status == InteractionStatus::Accepted => trust.grant(s).is_ok(),
        _ => false,
    }
}

struct Started {
    state: SlotState,
    tools: NewTools,
    warnings: Vec<String>,
}

/// The observer that turns a link's news into events.
fn observer(bus: &Bus, transport: &'static str) -> Observer {
    let bus = bus.clone();
    Arc::new(move |server: &str, e: LinkEvent| {
        let server = server.to_string();
        bus.record(match e {
            LinkEvent::Lost { reason } => KernelEvent::McpDisconnected { server, reason },
            LinkEvent::Attempt { attempt, delay } => KernelEvent::McpReconnectAttempt {
                server,
                attempt,
                delay_ms: delay.as_millis() as u64,
            },
            LinkEvent::Connected { info } => KernelEvent::McpConnected {
                server,
                transport: transport.into(),
                info,
                tools: None,
                again: true,
            },
            LinkEvent::GaveUp { reason } => KernelEvent::McpFailed {
                server,
                error: reason,
            },
        })
    })
}

async fn one(
    home: &StudHome,
    server: &McpServer,
    cwd: &Path,
    bus: &Bus,
    side: &client::ClientSide,
) -> Result<Started, String> {
    let log = client::stderr_log(home.root(), &server.id);
    let timeout = server.start_timeout.unwrap_or(client::START_TIMEOUT);
    let conn = client::connect(server, cwd, &log, timeout, &client::process_env, side)
        .await
        .map_err(|e| e.to_string())?;
    let listed = conn.tools().await.map_err(|e| e.to_string())?;
    let prompts = prompts_of(&conn).await;
    let info = conn.server_info.clone();
    let transport = match server.transport {
        Transport::Stdio { .. } => "stdio",
        Transport::Http { .. } => "http",
    };
    let link = Arc::new(McpLink::new(
        server.clone(),
        cwd.to_path_buf(),
        log,
        conn,
        observer(bus, transport),
        side.clone(),
    ));
    let (tools, warnings) = tool_specs(&link, listed);
    bus.record(KernelEvent::McpConnected {
        server: server.id.clone(),
        transport: transport.into(),
        info: info.clone(),
        tools: Some(tools.len() as u64),
        again: false,
    });
    Ok(Started {
        state: SlotState::Connected {
            link,
            info,
            tools: tools.iter().map(|(_, s)| s.name.clone()).collect(),
            prompts,
        },
        tools,
        warnings,
    })
}

async fn prompts_of(conn: &McpConnection) -> Vec<PromptInfo> {
    conn.prompts()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|p| PromptInfo {
            description: p.description.clone().unwrap_or_default(),
            arguments: p
                .arguments
                .unwrap_or_default()
                .into_iter()
                .map(|a| (a.name, a.required == Some(true)))
                .collect(),
            name: p.name,
        })
        .collect()
}

/// The session tools for a server's listed tools, and one warning per
/// tool left out.
pub fn tool_specs(link: &Arc<McpLink>, listed: Vec<Tool>) -> (NewTools, Vec<String>) {
    let server = link.server();
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    for t in listed {
        let Some(name) = tool_name(&server.id, &t.name) else {
            warnings.push(format!(
                "tool `{}` of MCP server `{}` left out: `mcp__{}__<tool>` would be longer than the 64 characters providers accept",
                t.name, server.id, server.id
            ));
            continue;
        };
        let hint = t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
        let description = t
            .description
            .as_deref()
            .map(str::to_string)
            .or(t.title.clone())
            .unwrap_or_default();
        let spec = ToolSpec {
            name,
            description: format!("[MCP server `{}`] {description}", server.id),
            parameters: serde_json::to_string(&*t.input_schema)
                .unwrap_or_else(|_| "{\"type\":\"object\"}".into()),
            // A server's hint skips approvals only where the user's own
            // settings said its hints are to be believed.
            read_only: hint && server.hints_trusted(),
        };
        tools.push((Arc::new(McpTool::new(&t.name, link.clone())), spec));
    }
    (tools, warnings)
}
