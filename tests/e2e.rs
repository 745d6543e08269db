//! The integration and end-to-end tests, one module per area, in one
//! binary (`cargo test --test e2e <area>::` runs one area).

mod common;

mod acp_e2e;
mod agents_e2e;
mod authoring_e2e;
mod authority_e2e;
mod bring_your_own_e2e;
mod bundled_specs;
mod checkpoints_e2e;
mod cli_ext;
mod commands_e2e;
mod diagnostics_e2e;
mod endpoint_e2e;
mod file_policy_e2e;
mod files_e2e;
mod front_doors_e2e;
mod golden_manifests;
mod habits_e2e;
mod hooks_e2e;
mod identity_e2e;
mod index_e2e;
mod kernel_e2e;
mod layers;
mod lifecycle_e2e;
mod manifest_writer;
mod mcp_e2e;
mod mcp_oauth_e2e;
mod mcp_serve_e2e;
mod metering_e2e;
mod profiles_e2e;
mod project_trust_e2e;
mod properties;
mod providers_e2e;
mod replay_e2e;
mod responses_e2e;
mod runtime_faults;
mod runtime_kinds;
mod screen_habits_e2e;
mod screen_model_e2e;
mod sessions_e2e;
mod settings_scope_e2e;
mod startup_e2e;
mod tools_e2e;
mod tui_e2e;
mod workflow_e2e;
