//! The JSON documents a command reads through the `session` import
//! (`read(view)`), as types both the kernel (which writes them) and the SDK
//! (which parses them) use. Fields may be added in a 0.1.x release, never
//! renamed or removed; readers ignore what they do not know.

use serde::{Deserialize, Serialize};

use crate::events::Usage;

/// `view::overview`: the session at a glance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub session_id: String,
    pub provider: String,
    pub model: String,
    /// `ask`, `allowlist` or `yolo`; fixed for the session.
    pub mode: String,
    pub state_machine: Option<String>,
    /// Messages in the history.
    pub messages: u64,
    /// Estimated tokens the history takes in the next request.
    pub context_tokens: u64,
    /// The model's context window, when the provider says.
    pub context_window: Option<u64>,
    pub usage: Usage,
    /// What the session cost so far, when `pricing` covers the model.
    pub cost_usd: Option<f64>,
    pub budget_usd: Option<f64>,
    pub turns: u64,
    /// A turn is running now (the command was turn-safe).
    pub turn_running: bool,
    pub tools: Vec<ToolView>,
    pub extensions: Vec<ExtensionView>,
    pub commands: Vec<CommandView>,
    /// Models the current provider offers.
    pub models: Vec<String>,
    /// Loaded provider extensions.
    pub providers: Vec<String>,
    /// Loaded state machines.
    pub state_machines: Vec<String>,
    /// Configured MCP servers (since stud 0.1.x: absent from older
    /// kernels, hence the default).
    #[serde(default)]
    pub mcp: Vec<McpServerView>,
}

/// One configured MCP server and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerView {
    pub id: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command or URL, with variable references as written (never
    /// their values).
    pub target: String,
    /// `global` or `project`.
    pub scope: String,
    /// `connected`, `disconnected` (found lost; started again at the next
    /// call), `failed` or `not started` (not trusted).
    pub status: String,
    /// The server's name and version, when connected.
    pub info: Option<String>,
    /// Why it failed or was not started.
    pub error: Option<String>,
    /// Its tools as the model sees them (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    /// Its prompts as slash commands (`/mcp__<server>__<prompt>`).
    pub prompts: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolView {
    pub name: String,
    pub extension: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionView {
    pub id: String,
    pub kind: String,
    pub version: String,
    /// `bundled`, `global` or `project`.
    pub scope: String,
    /// `loaded`, or `not loaded yet` for a command never run.
    pub status: String,
    pub health: Health,
}

/// An extension's calls so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub calls: u64,
    pub failures: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub mean_ms: f64,
    pub max_ms: f64,
    /// Instances created (more than one: it trapped or timed out and was
    /// restarted).
    pub instantiations: u64,
    /// What it cost (absent from hosts before metering).
    #[serde(default)]
    pub metered: Metered,
}

/// What one extension cost so far (see the host's `runtime::meter`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metered {
    /// Thread CPU time while its calls ran (guest code and the host code
    /// it ran inline), milliseconds.
    pub cpu_ms: f64,
    /// Wall time inside its imports (waits included), milliseconds.
    pub host_ms: f64,
    /// The largest linear memory one instance held, bytes.
    pub peak_memory_bytes: u64,
    pub net_bytes_sent: u64,
    pub net_bytes_received: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandView {
    pub name: String,
    pub aliases: Vec<String>,
    pub description: String,
    pub argument_hint: Option<String>,
    pub extension: String,
    pub scope: String,
    pub turn_safe: bool,
}

/// `view::sessions`: saved sessions of this project, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub current: String,
    pub sessions: Vec<SessionEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEntry {
    pub id: String,
    pub title: String,
    pub updated_ms: u64,
}

/// `view::network-policy`: who may reach which hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkPolicy {
    /// The global settings file grants are written to.
    pub settings_file: String,
    pub extensions: Vec<NetworkEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkEntry {
    pub id: String,
    pub scope: String,
    /// Hosts its manifest names (always allowed).
    pub manifest: Vec<String>,
    /// Its manifest lets the user grant more (`user-hosts = true`).
    pub user_hosts: bool,
    /// Granted in the global settings (`network.<id>`).
    pub global: Vec<String>,
    /// Granted in the project's settings (honoured once the project is trusted).
    pub project: Vec<String>,
}

/// `view::trust`: whether this folder's `.stud/` is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustView {
    pub folder: String,
    /// `trusted`, `not trusted`, or `no .stud folder`.
    pub state: String,
    /// Extensions the project brings (loaded only when trusted).
    pub project_extensions: Vec<String>,
    /// What to type to change it.
    pub hint: String,
}
