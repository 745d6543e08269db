//! Settings: the `settings.json` shape and how the global and project
//! files are layered.

pub mod edit;
pub mod extension_configs;
mod layers;
pub mod publishers;
pub mod scope_rules;
mod settings;

pub use extension_configs::ExtensionConfigs;
pub use layers::{Layered, ProjectLayer};
pub use settings::{
    AgentSettings, Budget, Checkpoints, CompactionSettings, ExtensionBudget, NetworkSettings,
    Notifications, NotifyVia, Price, ProcessSandbox, Profile, ResponseLimitSettings, Retries,
    SandboxMode, SecretRef, Settings, SettingsError,
};
