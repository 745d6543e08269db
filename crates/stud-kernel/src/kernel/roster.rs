//! The extension roster: the loaded extensions a session works with,
//! arranged for the loop (the provider and its model, the tool table,
//! the hook slots, context providers, state machines). A hot reload
//! swaps a member in place.

use std::sync::Arc;

use super::capabilities::{MissingCapability, check_session};
use super::events::Bus;
use super::hooks::HookRunner;
use super::tools::ToolTable;
use crate::manifest::Kind;
use crate::runtime::domain::{ModelCapabilities, ModelInfo};
use crate::runtime::{CallError, Extension};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "provider `{wanted}` is not available; loaded providers: {available}. Pick one with --provider"
    )]
    ProviderMissing { wanted: String, available: String },
    /// The provider is there but did not load: the person needs why.
    #[error(
        "provider `{wanted}` did not load: {reason}. Fix that, or pick another provider with --provider"
    )]
    ProviderFailed { wanted: String, reason: String },
    // The cause is part of the message, not a `source`: an error chain
    // would print it twice.
    #[error("cannot ask provider `{provider}` for its models: {reason}")]
    Models { provider: String, reason: CallError },
    #[error(
        "model `{model}` is not offered by provider `{provider}`; it offers: {offered}. Pick one with --model"
    )]
    UnknownModel {
        model: String,
        provider: String,
        offered: String,
    },
    #[error(transparent)]
    Capability(#[from] MissingCapability),
}

/// What the roster is arranged from (settings and flags).
pub struct RosterChoice<'a> {
    pub provider: &'a str,
    pub model: Option<&'a str>,
    /// Offer the loaded tools to the model (`--no-tools` turns it off).
    pub tools_enabled: bool,
    /// Hook extension ids that run first, in this order.
    pub hook_order: &'a [super::hooks::HookOrder],
    /// Observers start once this opens.
    pub first_request: &'a super::first_request::FirstRequest,
}

pub struct Roster {
    pub(crate) provider: Arc<Extension>,
    pub(crate) model: String,
    pub(crate) models: Vec<ModelInfo>,
    pub(crate) tools: ToolTable,
    pub(crate) hooks: HookRunner,
    pub(crate) context_providers: Vec<Arc<Extension>>,
    /// The loaded state machines, any of which can be attached.
    pub(crate) state_machines: Vec<Arc<Extension>>,
}

impl Roster {
    /// Arrange loaded extensions. Returns warnings for tools that could
    /// not be added.
    pub async fn arrange(
        exts: &[Arc<Extension>],
        choice: RosterChoice<'_>,
        bus: Bus,
    ) -> Result<(Roster, Vec<String>), SessionError> {
        let of = |k: Kind| exts.iter().filter(move |e| e.kind() == k).cloned();
        let providers: Vec<Arc<Extension>> = of(Kind::Provider).collect();
        let provider = providers
            .iter()
            .find(|p| p.id().as_str() == choice.provider)
            .cloned()
            .ok_or_else(|| SessionError::ProviderMissing {
                wanted: choice.provider.to_string(),
                available: list(providers.iter().map(|p| p.id().to_string())),
            })?;
        let models = provider
            .provider_models()
            .await
            .map_err(|reason| SessionError::Models {
                provider: choice.provider.to_string(),
                reason,
            })?;
        let model = match choice.model {
            Some(m) => find_model(&models, m, choice.provider)?.id.clone(),
            None => models
                .first()
                .map(|m| m.id.clone())
                .unwrap_or_else(|| "default".into()),
        };
        let tool_exts: Vec<Arc<Extension>> = if choice.tools_enabled {
            of(Kind::Tool).collect()
        } else {
            Vec::new()
        };
        let (tools, warnings) = ToolTable::build(&tool_exts).await;
        if let Some(info) = models.iter().find(|m| m.id == model) {
            check_session(choice.provider, &model, &info.capabilities, tools.len())?;
        }
        let hook_exts: Vec<Arc<Extension>> = of(Kind::Hook).collect();
        let roster = Roster {
            hooks: HookRunner::new(&hook_exts, choice.hook_order, bus, choice.first_request),
            provider,
            model,
            models,
            tools,
            context_providers: exts
                .iter()
                .filter(|e| e.provides_context())
                .cloned()
                .collect(),
            state_machines: of(Kind::StateMachine).collect(),
        };
        Ok((roster, warnings))
    }

    pub fn provider_id(&self) -> &str {
        self.provider.id().as_str()
    }

    /// What the current model declares, if the provider listed it.
    pub(crate) fn capabilities(&self) -> Option<&ModelCapabilities> {
        self.models
            .iter()
            .find(|m| m.id == self.model)
            .map(|m| &m.capabilities)
    }

    /// The offered model called `model`.
    pub(crate) fn find_model(&self, model: &str) -> Result<&ModelInfo, SessionError> {
        find_model(&self.models, model, self.provider_id())
    }

    /// A child session's roster: the same provider, hooks, context
    /// providers and state machines, the tools given, the model named.
    pub(crate) fn child(&self, tools: ToolTable, model: String, bus: Bus) -> Roster {
        Roster {
            provider: self.provider.clone(),
            model,
            models: self.models.clone(),
            tools,
            hooks: self.hooks.shared(bus),
            context_providers: self.context_providers.clone(),
            state_machines: self.state_machines.clone(),
        }
    }

    /// The extension serving tool `name`.
    pub fn tool_extension(&self, name: &str) -> Option<Arc<Extension>> {
        self.tools
            .get(name)
            .and_then(|t| t.runner.component().cloned())
    }

    /// Put a reloaded extension in the place of its old version.
    pub(crate) async fn swap(&mut self, ext: &Arc<Extension>) -> Result<(), String> {
        match ext.kind() {
            Kind::Tool => self.tools.replace(ext).await,
            Kind::Provider if ext.id() == self.provider.id() => {
                let models = ext
                    .provider_models()
                    .await
                    .map_err(|e| format!("the new version cannot list its models: {e}"))?;
                if !models.iter().any(|m| m.id == self.model) {
                    return Err(format!(
                        "the new version no longer offers model `{}`",
                        self.model
                    ));
                }
                self.provider = ext.clone();
                self.models = models;
                Ok(())
            }
            Kind::Provider => Ok(()),
            Kind::Hook => self.hooks.replace(ext),
            Kind::ContextProvider => {
                // The new version's `[context] when-config` may take it out
                // of the requests, or bring it in.
                match self
                    .context_providers
                    .iter()
                    .position(|c| c.id() == ext.id())
                {
                    Some(at) if ext.provides_context() => self.context_providers[at] = ext.clone(),
                    Some(at) => {
                        self.context_providers.remove(at);
                    }
                    None if ext.provides_context() => self.context_providers.push(ext.clone()),
                    None => {}
                }
                Ok(())
            }
            other => Err(format!(
                "reloading {other} extensions in a running session is not supported; restart stud to use the new version"
            )),
        }
    }
}

fn find_model<'a>(
    models: &'a [ModelInfo],
    model: &str,
    provider: &str,
) -> Result<&'a ModelInfo, SessionError> {
    models
        .iter()
        .find(|m| m.id == model)
        .ok_or_else(|| SessionError::UnknownModel {
            model: model.to_string(),
            provider: provider.to_string(),
            offered: list(models.iter().map(|x| x.id.clone())),
        })
}

fn list(items: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = items.collect();
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}
