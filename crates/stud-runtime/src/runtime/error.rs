//! Typed errors of the component runtime. Every message names the
//! extension and says what to do.

use std::path::PathBuf;

use crate::manifest::ExtensionId;

/// Why an extension could not be loaded. The session goes on without it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "extension `{id}` was left out: it depends on `{dependency}`, which failed to load; fix `{dependency}` first"
    )]
    DependencyFailed {
        id: ExtensionId,
        dependency: ExtensionId,
    },

    #[error("extension `{id}`: cannot read its component {path}: {source}")]
    Read {
        id: ExtensionId,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "extension `{id}`: {path} is not a WebAssembly component ({detail}); build it with `cargo build --target wasm32-wasip2` and the stud SDK"
    )]
    NotAComponent {
        id: ExtensionId,
        path: PathBuf,
        detail: String,
    },

    #[error(
        "extension `{id}` was built for contract {built_for}, but this stud supports {supported}; rebuild it with a stud-sdk for {supported} or install a version built for it"
    )]
    ContractUnsupported {
        id: ExtensionId,
        built_for: String,
        supported: String,
    },

    #[error(
        "extension `{id}` is declared as a {kind} but does not export `{interface}`; check `kind` in its extension.toml and the SDK macro it uses (export_{macro_kind}!)"
    )]
    MissingExport {
        id: ExtensionId,
        kind: String,
        interface: String,
        macro_kind: String,
    },

    #[error(
        "extension `{id}` imports `{interface}`, which needs the `{capability}` capability; add `{manifest_line}` under [capabilities] in its extension.toml"
    )]
    CapabilityNotRequested {
        id: ExtensionId,
        interface: String,
        capability: String,
        manifest_line: String,
    },

    #[error("extension `{id}` imports `{interface}`, which a {kind} extension may not use")]
    ImportNotAllowed {
        id: ExtensionId,
        kind: String,
        interface: String,
    },

    #[error(
        "extension `{id}`: integrity check failed for {path}: expected {expected}, found {actual}; the file changed after it was installed. Reinstall it with `stud ext install <source>` or drop it with `stud ext remove {id}` (`stud ext verify` lists every mismatch; bundled ones need a rebuilt stud)"
    )]
    Integrity {
        id: ExtensionId,
        path: PathBuf,
        expected: String,
        actual: String,
    },

    #[error(
        "extension `{id}`: {path} changed since this session pinned it at its start (pinned {pinned}, found {actual}), so it is not loaded; `/reload` reads and pins the new build (or start stud again)"
    )]
    ChangedSincePinned {
        id: ExtensionId,
        path: PathBuf,
        pinned: String,
        actual: String,
    },

    #[error("extension `{id}`: compiling its component failed: {message}")]
    Compile { id: ExtensionId, message: String },

    #[error(
        "extension `{id}`: its state cannot be carried over to the new version: {message}; the old version keeps running"
    )]
    StateCarry { id: ExtensionId, message: String },

    #[error("extension `{id}`: linking failed: {message}")]
    Link { id: ExtensionId, message: String },

    #[error("extension `{id}`: its config does not match its schema: {message}")]
    Config { id: ExtensionId, message: String },
}

/// Why a call into an extension failed. The instance that failed is thrown
/// away; the next call gets a fresh one with the same state slot.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error(
        "extension `{id}` ran past its {timeout_ms} ms deadline in `{func}` and was stopped; raise `limits.timeout-ms` in its extension.toml if it needs longer"
    )]
    Timeout {
        id: ExtensionId,
        func: &'static str,
        timeout_ms: u64,
    },

    #[error("extension `{id}`: `{func}` was cancelled")]
    Cancelled { id: ExtensionId, func: &'static str },

    #[error(
        "extension `{id}` went over its memory limit of {limit_mib} MiB in `{func}` and was stopped; raise `limits.memory-mib` in its extension.toml if it needs more"
    )]
    MemoryLimit {
        id: ExtensionId,
        func: &'static str,
        limit_mib: u64,
    },

    #[error(
        "extension `{id}` used {used_ms:.0} ms of CPU this turn, over its budget of {budget_ms} ms (the lower of its manifest's `limits.cpu-ms-per-turn` and settings `budget.extensions.{id}.cpuMsPerTurn`); its calls are refused until the next turn"
    )]
    CpuBudget {
        id: ExtensionId,
        func: &'static str,
        budget_ms: u32,
        used_ms: f64,
    },

    #[error("extension `{id}` crashed (trap) in `{func}`: {detail}")]
    Trap {
        id: ExtensionId,
        func: &'static str,
        detail: String,
    },

    #[error("extension `{id}` returned an error from `{func}`: [{}] {}", error.code, error.message)]
    Guest {
        id: ExtensionId,
        func: &'static str,
        error: Box<crate::runtime::services::ExtError>,
    },

    #[error("extension `{id}`: instantiating failed: {message}")]
    Instantiate { id: ExtensionId, message: String },

    /// Its code could not be compiled or linked (at its first call); the
    /// message is the load error's, naming the extension.
    #[error("{message}")]
    Unloadable { id: ExtensionId, message: String },
}

impl CallError {
    pub fn extension(&self) -> &ExtensionId {
        match self {
            CallError::Timeout { id, .. }
            | CallError::Cancelled { id, .. }
            | CallError::MemoryLimit { id, .. }
            | CallError::CpuBudget { id, .. }
            | CallError::Trap { id, .. }
            | CallError::Guest { id, .. }
            | CallError::Instantiate { id, .. }
            | CallError::Unloadable { id, .. } => id,
        }
    }
}

/// Errors creating the runtime itself.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot configure the WebAssembly engine: {0}")]
    Engine(String),
}
