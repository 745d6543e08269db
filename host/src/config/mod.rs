//! Settings: the `settings.json` shape and how the global and project
//! files are layered.

pub mod edit;
mod layers;
pub mod scope_rules;
mod settings;

pub use layers::{Layered, ProjectLayer};
pub use settings::{
    AgentSettings, Budget, CompactionSettings, NetworkSettings, Price, ProcessSandbox, Profile,
    ResponseLimitSettings, Retries, SandboxMode, SecretRef, Settings, SettingsError,
};
