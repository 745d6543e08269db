//! The extension manifest (`extension.toml`): parsing and complete
//! validation. Every problem in a file is reported at once, each naming
//! its field and what to write instead, because manifests are written by
//! hand and fixed by reading the error.
//!
//! This module is shared with installers and tooling, so it must not
//! depend on the runtime (wasmtime). See `docs/manifest.md` for the format.

mod capabilities;
mod command;
pub mod compiled_schema;
mod component;
mod config;
mod context;
mod dependencies;
mod fields;
mod hooks;
mod host_pattern;
mod id;
mod kind;
mod limits;
mod problems;
mod project_files;
mod schema;
mod slots;
mod socket_request;
mod state;
mod validate;
mod versions;
mod when_config;

use std::path::PathBuf;

pub use capabilities::{
    Capabilities, EXEC_KINDS, FsAccess, FsDir, FsRequest, NETWORK_KINDS, SECRETS_KINDS,
    SOCKET_KINDS, is_secret_name,
};
pub use command::{CommandDecl, CommandName, InvalidCommandName};
pub use component::DEFAULT_COMPONENT;
pub use context::ContextDecl;
pub use dependencies::Dependency;
pub use hooks::HookRegistration;
pub use host_pattern::{HostPattern, InvalidHostPattern};
pub use id::{ExtensionId, InvalidId, MAX_ID_LEN};
pub use kind::{Kind, ReloadBehavior};
pub use limits::{
    DEFAULT_MEMORY_MIB, DEFAULT_TOOL_INSTANCES, INSTANCES_RANGE, Limits, MEMORY_MIB_RANGE,
    TIMEOUT_MS_RANGE,
};
pub use problems::{MAX_PROBLEMS, ManifestError, Problem};
pub use project_files::{ProjectFiles, Reads};
pub use slots::{
    HookKind, HookSlot, Phase, SlotRule, Stage, UnknownSlot, attach_points, slot_allows,
};
pub use socket_request::{InvalidSocketRequest, SocketRequest};
pub use state::{DriftPolicy, StateSlot};
pub use stud_protocol::text_enum::UnknownName;
pub use validate::{
    MAX_DESCRIPTION_CHARS, MAX_MANIFEST_BYTES, MAX_NAME_CHARS, parse_bundled_manifest,
    parse_manifest,
};

/// A validated manifest: every field checked, defaults filled in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub id: ExtensionId,
    /// Human-readable name.
    pub name: String,
    pub version: semver::Version,
    pub kind: Kind,
    /// The `stud:extension` contract versions the extension works with;
    /// already checked against the host's.
    pub contract: semver::VersionReq,
    pub description: Option<String>,
    /// Relative path of the component inside the extension folder.
    pub component: PathBuf,
    pub reload: ReloadBehavior,
    pub limits: Limits,
    pub capabilities: Capabilities,
    /// JSON Schema of the extension's config; compiled and checked to be a
    /// closed object schema.
    pub config_schema: Option<serde_json::Value>,
    pub state: Option<StateSlot>,
    /// Non-empty exactly when `kind` is [`Kind::Hook`].
    pub hooks: Vec<HookRegistration>,
    /// Sorted by id.
    pub dependencies: Vec<Dependency>,
    /// `Some` exactly when `kind` is [`Kind::Command`].
    pub command: Option<CommandDecl>,
    /// `[context]`: only a [`Kind::ContextProvider`] may have one.
    pub context: Option<ContextDecl>,
}
