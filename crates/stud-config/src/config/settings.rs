//! `settings.json`: the keys the kernel reads today. Unknown keys are
//! errors (a typo must not silently do nothing).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::extension_configs::ExtensionConfigs;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    // The cause is part of the message and not a `source`, so an error
    // chain does not print it twice.
    #[error("cannot read {path}: {reason}")]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path}: {reason}; see settings.example.json for every key")]
    Parse {
        path: PathBuf,
        reason: serde_json::Error,
    },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Settings {
    #[serde(rename = "$comment", default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub security_mode: Option<SecurityMode>,
    #[serde(default)]
    pub runtime: RuntimeSettings,
    #[serde(default)]
    pub active: Active,
    /// System prompt text sent with every request.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Per-extension config, by category and id.
    #[serde(default)]
    pub providers: HashMap<String, Value>,
    #[serde(default)]
    pub tools: HashMap<String, Value>,
    #[serde(default)]
    pub hooks: HashMap<String, Value>,
    #[serde(default)]
    pub ui: HashMap<String, Value>,
    #[serde(default)]
    pub loggers: HashMap<String, Value>,
    #[serde(default)]
    pub context_providers: HashMap<String, Value>,
    #[serde(default)]
    pub commands: HashMap<String, Value>,
    /// Config of session stores (`filesystem`: `{"fsync": false}`).
    #[serde(default)]
    pub session_stores: HashMap<String, Value>,
    /// Config of state machines (workflows), by id.
    #[serde(default)]
    pub state_machines: HashMap<String, Value>,
    #[serde(default)]
    pub ordering: Ordering,
    /// Hosts granted per extension id, beyond its manifest (honoured for
    /// extensions whose manifest says `user-hosts = true`).
    #[serde(default)]
    pub network: HashMap<String, Vec<String>>,
    /// `host:port` pairs granted per extension id for its `socket` import
    /// (over what its manifest's `sockets` lists: a `*:port` there, or an
    /// internal address, needs the person's exact grant here).
    #[serde(default)]
    pub sockets: HashMap<String, Vec<String>>,
    /// Where each extension's declared secrets come from, by extension id
    /// and secret name. Unlisted names come from the environment variable
    /// of the same name.
    #[serde(default)]
    pub secrets: HashMap<String, HashMap<String, SecretRef>>,
    /// Prices per model id, USD per million tokens.
    #[serde(default)]
    pub pricing: HashMap<String, Price>,
    #[serde(default)]
    pub budget: Budget,
    /// Delegation to child sessions (the `task` tool).
    #[serde(default)]
    pub agents: AgentSettings,
    /// Whose extension signatures count (global settings only).
    #[serde(default)]
    pub trusted_publishers: Vec<super::publishers::TrustedPublisher>,
    /// Whether unsigned extensions install (global settings only).
    #[serde(default)]
    pub signature_policy: super::publishers::SignaturePolicy,
    /// URLs of extension indexes for `stud ext search/install NAME`
    /// (global settings only).
    #[serde(default)]
    pub extension_indexes: Vec<String>,
    #[serde(default)]
    pub compaction: CompactionSettings,
    /// A bell or desktop notification when a long turn ends or waits for
    /// the person (off unless asked for).
    #[serde(default)]
    pub notifications: Notifications,
    /// Snapshots before a turn's changes, for `/undo` and `/rewind`.
    #[serde(default)]
    pub checkpoints: Checkpoints,
    /// MCP servers by id (`mcp::config` reads and checks the entries).
    #[serde(default)]
    pub mcp_servers: HashMap<String, Value>,
    /// Named extension sets for `--profile NAME` (global settings only).
    #[serde(default)]
    pub profiles: HashMap<String, Profile>,
    /// Project files no extension may open.
    #[serde(default)]
    pub protected_paths: ProtectedPathSettings,
}

/// `protectedPaths`: the host's file policy (`runtime::protected_paths`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedPathSettings {
    /// Globs protected besides the defaults (`.env`, keys); a project may
    /// add more, never remove any.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Exact project-relative paths extensions may open although a pattern
    /// protects them (global settings only).
    #[serde(default)]
    pub allow: Vec<String>,
}

/// `profiles.<name>`: which extensions a session uses, and its provider,
/// model and mode. A list that is unset keeps every loaded extension of
/// that kind; an empty list keeps none.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `ask`, `allowlist` or `yolo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Tool extension ids offered to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Hook extension ids that run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_providers: Option<Vec<String>>,
    /// The UI extension that renders and answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_machine: Option<String>,
    /// The session store that keeps this profile's sessions (a team's
    /// shared one, say), over `active.sessionStore`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_store: Option<String>,
    /// Extension ids left out (any kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disable: Vec<String>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Price {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// `agents`: how far delegation may go.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentSettings {
    /// Offer the `task` tool (default true).
    pub enabled: Option<bool>,
    /// Sessions in a chain, the main one included (default 2: children
    /// may not start grandchildren).
    pub max_depth: Option<u32>,
    /// Part of the parent's remaining cost budget one child may spend
    /// (0..1, default 0.5).
    pub budget_share: Option<f64>,
    /// A child's bound on provider requests when its definition sets none
    /// (default 25; never more than the parent's).
    pub max_iterations: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Budget {
    /// Stop the session cleanly once its cost reaches this (USD).
    pub max_cost_usd: Option<f64>,
    /// Per extension id: limits below its manifest's (the lower wins).
    #[serde(default)]
    pub extensions: HashMap<String, ExtensionBudget>,
}

/// What one extension may spend, set by the person (over what its
/// manifest's `[limits]` allow; the lower of the two applies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExtensionBudget {
    /// Guest CPU time per turn, in ms (typed error `cpu-budget` past it).
    pub cpu_ms_per_turn: Option<u32>,
    /// A provider's tokens per session (the turn fails `token-budget`).
    pub tokens_per_session: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CompactionSettings {
    /// Fraction of the context window that raises a warning (0.8).
    pub warn_at: Option<f64>,
    /// Fraction that triggers compaction (0.95).
    pub compact_at: Option<f64>,
    /// Recent messages never shortened or dropped (6).
    pub keep_recent: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Notifications {
    /// How the terminal is told: `off` (the default), `bell`, `osc9`
    /// (iTerm2, WezTerm, kitty, Windows Terminal) or `osc777` (VTE-based
    /// terminals, rxvt).
    #[serde(default)]
    pub via: NotifyVia,
    /// Only a turn that has run at least this long notifies (10).
    pub after_seconds: Option<u64>,
}

/// `checkpoints`: what `/undo` and `/rewind` can put back (all global
/// only: a cloned project cannot turn off the person's undo).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Checkpoints {
    /// Take snapshots at all (true).
    pub enabled: Option<bool>,
    /// Keep files the ignore rules leave out, `node_modules` say (false).
    pub include_ignored: Option<bool>,
    /// A file larger than this is not kept (8).
    #[serde(rename = "maxFileMiB")]
    pub max_file_mib: Option<u64>,
    /// New content one snapshot may keep (256).
    #[serde(rename = "maxSnapshotMiB")]
    pub max_snapshot_mib: Option<u64>,
    /// Journals untouched for this many days are pruned (30).
    pub keep_days: Option<u64>,
    /// In a git repository, keep each snapshot as an unreferenced commit
    /// too, for `git diff` (true).
    pub git_commits: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NotifyVia {
    #[default]
    Off,
    Bell,
    Osc9,
    Osc777,
}

/// A reference to a secret value; the value itself never goes in
/// settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum SecretRef {
    /// An environment variable of stud's process.
    Env(String),
    /// A file holding the value (surrounding whitespace is trimmed);
    /// `~/` is the home directory.
    File(PathBuf),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityMode {
    /// Absent: `ask` (a project file may set only an allowlist).
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub allowlist: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuntimeSettings {
    #[serde(default)]
    pub continuation: Continuation,
    #[serde(default)]
    pub tool_parallelism: Option<usize>,
    /// How long a person has to answer a question, in milliseconds.
    #[serde(default)]
    pub interaction_timeout_ms: Option<u64>,
    /// Bytes of tool output sent to the model.
    #[serde(default)]
    pub tool_output_limit: Option<usize>,
    #[serde(default)]
    pub retries: Retries,
    /// Confinement of the processes tools start.
    #[serde(default)]
    pub process_sandbox: ProcessSandbox,
    /// What one HTTP response may cost (time, bytes).
    #[serde(default)]
    pub network: NetworkSettings,
    /// What one model response may bring once assembled.
    #[serde(default)]
    pub response_limits: ResponseLimitSettings,
}

/// `runtime.network`: bounds on every response an extension receives.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkSettings {
    /// Longest wait for a response's headers, milliseconds.
    pub header_timeout_ms: Option<u64>,
    /// Longest time one response may take in all, milliseconds.
    pub response_timeout_ms: Option<u64>,
    /// Most bytes of body one response may bring.
    pub max_response_bytes: Option<u64>,
}

/// `runtime.responseLimits`: bounds on one assembled model response.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResponseLimitSettings {
    /// Bytes of answer text.
    pub text_bytes: Option<usize>,
    /// Bytes of thinking.
    pub thinking_bytes: Option<usize>,
    /// Bytes of tool-call arguments, all calls together.
    pub tool_argument_bytes: Option<usize>,
}

/// `runtime.processSandbox`: where processes started by tools may write.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProcessSandbox {
    #[serde(default)]
    pub mode: SandboxMode,
    /// More folders processes may write to (`~/` is the home directory),
    /// e.g. a package manager's cache.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only in the project, the temp folder and `writable`
    /// (Landlock, where the kernel has it).
    #[default]
    WriteProject,
    /// The user's full rights.
    Off,
}

/// Retrying provider requests that failed for a passing reason (rate
/// limits, overload, 5xx, network).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Retries {
    /// Retries after the first attempt (default 4; 0 turns retrying off).
    pub max_retries: Option<u32>,
    /// First backoff delay in milliseconds (default 500), doubled each time.
    pub base_delay_ms: Option<u64>,
    /// Longest single delay, including a server's Retry-After (default 60000).
    pub max_delay_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Continuation {
    pub max_iterations: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Active {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Most output tokens per response (the provider's default otherwise).
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// `off`, `low`, `medium` or `high`.
    pub thinking: Option<String>,
    /// Ask providers to place prompt-cache breakpoints.
    pub cache_hints: Option<bool>,
    /// The session store to use when several are loaded.
    pub session_store: Option<String>,
    /// The store that keeps sessions when `session_store` cannot start
    /// (its database unreachable), instead of refusing to start.
    pub session_store_fallback: Option<String>,
    /// The one UI extension that answers approvals, trust and grant
    /// requests (global settings only); other UIs only observe.
    pub interactor: Option<String>,
    /// The state machine attached to every session (global settings
    /// only; `--sm` chooses one for a run).
    pub state_machine: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ordering {
    /// Hook extension ids that run first, in this order.
    #[serde(default)]
    pub hooks: Vec<String>,
}

impl Settings {
    /// Read `path`; a missing file is empty settings.
    pub fn load(path: &Path) -> Result<Self, SettingsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => {
                return Err(SettingsError::Read {
                    path: path.to_path_buf(),
                    reason: source,
                });
            }
        };
        serde_json::from_str(&text).map_err(|source| SettingsError::Parse {
            path: path.to_path_buf(),
            reason: source,
        })
    }

    /// Settings from an already merged JSON value.
    pub fn from_value(value: &Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value.clone())
    }

    /// Every extension's config, by the kind its section is for.
    pub fn extension_configs(&self) -> ExtensionConfigs {
        use crate::manifest::Kind;
        let sections = [
            (Kind::Provider, &self.providers),
            (Kind::Tool, &self.tools),
            (Kind::Hook, &self.hooks),
            (Kind::Ui, &self.ui),
            (Kind::Logger, &self.loggers),
            (Kind::ContextProvider, &self.context_providers),
            (Kind::Command, &self.commands),
            (Kind::SessionStore, &self.session_stores),
            (Kind::StateMachine, &self.state_machines),
        ];
        sections
            .into_iter()
            .flat_map(|(kind, map)| {
                map.iter()
                    .map(move |(id, v)| ((kind, id.clone()), v.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"theme": "dark"}"#).unwrap();
        let err = Settings::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("settings.json") && err.contains("theme"),
            "{err}"
        );
        std::fs::write(&path, r#"{"runtime": {"continuation": {"maxIterations": 3}}, "providers": {"scripted": {"model": "m"}}}"#).unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.runtime.continuation.max_iterations, Some(3));
        assert_eq!(
            s.extension_configs()
                .get(crate::manifest::Kind::Provider, "scripted")
                .map(|c| c["model"].clone()),
            Some(serde_json::json!("m"))
        );
        assert!(Settings::load(&dir.path().join("missing.json")).is_ok());
    }
}

#[cfg(test)]
mod example {
    use super::*;

    #[test]
    fn the_example_settings_file_parses() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../settings.example.json"
        ));
        let s = Settings::load(path).expect("settings.example.json must stay valid");
        assert_eq!(s.security_mode.and_then(|m| m.mode).as_deref(), Some("ask"));
    }
}
