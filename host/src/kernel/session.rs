//! A session: the loaded extension set arranged for the loop (provider,
//! tool table, hook slots, authority, interactors), the history, and the
//! settings fixed at start (security mode, loop bound, parallelism).

use std::sync::Arc;

use super::authority::Authority;
use super::capabilities::{MissingCapability, check_request, check_session};
use super::compaction::CompactionConfig;
use super::events::Bus;
use super::hooks::HookRunner;
use super::interaction::{Answer, Interactions};
use super::persist::Persistence;
use super::reload::{Ready, Reloader};
use super::retry::RetryPolicy;
use super::tools::ToolTable;
use crate::extensions::consent;
use crate::manifest::{Kind, ReloadBehavior};
use crate::runtime::bindings::stud::extension::interaction::{InteractionKind, InteractionStatus};
use crate::runtime::bindings::stud::extension::provider_types::{
    ModelCapabilities, ModelInfo, Request, RequestParams, ThinkingLevel,
};
use crate::runtime::bindings::stud::extension::types::{Message, Usage};
use crate::runtime::{CallError, Extension};
use stud_protocol::events::KernelEvent;

/// Default bound on provider requests per turn
/// (`runtime.continuation.maxIterations`).
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;
/// Default number of tool calls run at once.
pub const DEFAULT_TOOL_PARALLELISM: usize = 4;
/// Default `runtime.toolOutputLimit` (bytes).
pub const DEFAULT_TOOL_OUTPUT_LIMIT: usize = 64 * 1024;

pub struct SessionConfig {
    pub provider: String,
    pub model: Option<String>,
    pub max_iterations: u32,
    pub tool_parallelism: usize,
    /// Bytes of tool output sent to the model; the rest is cut with a marker.
    pub tool_output_limit: usize,
    /// What one model response may bring.
    pub response_limits: super::response_limits::ResponseLimits,
    pub system_prompt: Option<String>,
    /// Hook extension ids that run first, in this order.
    pub hook_order: Vec<String>,
    /// Offer the loaded tools to the model (`--no-tools` turns it off).
    pub tools_enabled: bool,
    pub retry: RetryPolicy,
    pub compaction: CompactionConfig,
    /// Prices per model id (settings `pricing`).
    pub pricing: std::collections::HashMap<String, crate::config::Price>,
    /// Stop before a request once the session cost reached this (USD).
    pub max_cost_usd: Option<f64>,
    /// Request parameters from settings (`active.*`).
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub thinking: ThinkingLevel,
    pub cache_hints: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "provider `{wanted}` is not available; loaded providers: {available}. Pick one with --provider"
    )]
    ProviderMissing { wanted: String, available: String },
    #[error("cannot ask provider `{provider}` for its models: {source}")]
    Models { provider: String, source: CallError },
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

pub struct Session {
    pub id: String,
    pub bus: Bus,
    pub(crate) provider: Arc<Extension>,
    pub(crate) model: String,
    pub(crate) models: Vec<ModelInfo>,
    pub(crate) tools: ToolTable,
    pub(crate) hooks: HookRunner,
    pub(crate) authority: Authority,
    pub(crate) interactions: Arc<Interactions>,
    pub history: Vec<Message>,
    pub(crate) config: SessionConfig,
    pub(crate) turns: u64,
    pub usage: Usage,
    pub(crate) reloader: Option<Arc<Reloader>>,
    pub(crate) persistence: Option<Persistence>,
    pub(crate) context_providers: Vec<Arc<Extension>>,
    /// Provider tokens per estimated token (calibrated from usage).
    pub(crate) token_ratio: f64,
    pub(crate) warned_this_turn: bool,
    /// What the session has cost so far (USD), when prices are known.
    pub cost_usd: f64,
    /// Reloads compiled and waiting for a boundary their behaviour allows.
    pub(crate) pending_reloads: Vec<Ready>,
    /// The attached state machine, if any.
    pub(crate) workflow: Option<super::workflow::Attached>,
    /// Where its workflow stands (restored on resume).
    pub(crate) workflow_position: Option<super::workflow::Position>,
    /// The loaded state machines, any of which can be attached.
    pub(crate) state_machines: Vec<Arc<Extension>>,
}

impl Session {
    /// Arrange loaded extensions into a session. Returns warnings for tools
    /// that could not be added.
    pub async fn start(
        exts: &[Arc<Extension>],
        config: SessionConfig,
        authority: Authority,
        interactions: Arc<Interactions>,
        bus: Bus,
    ) -> Result<(Session, Vec<String>), SessionError> {
        let of = |k: Kind| exts.iter().filter(move |e| e.kind() == k).cloned();
        let providers: Vec<Arc<Extension>> = of(Kind::Provider).collect();
        let provider = providers
            .iter()
            .find(|p| p.id().as_str() == config.provider)
            .cloned()
            .ok_or_else(|| SessionError::ProviderMissing {
                wanted: config.provider.clone(),
                available: list(providers.iter().map(|p| p.id().to_string())),
            })?;
        let models = provider
            .provider_models()
            .await
            .map_err(|source| SessionError::Models {
                provider: config.provider.clone(),
                source,
            })?;
        let model = match &config.model {
            Some(m) => find_model(&models, m, &config.provider)?.id.clone(),
            None => models
                .first()
                .map(|m| m.id.clone())
                .unwrap_or_else(|| "default".into()),
        };
        let tool_exts: Vec<Arc<Extension>> = if config.tools_enabled {
            of(Kind::Tool).collect()
        } else {
            Vec::new()
        };
        let (tools, warnings) = ToolTable::build(&tool_exts).await;
        if let Some(info) = models.iter().find(|m| m.id == model) {
            check_session(&config.provider, &model, &info.capabilities, tools.len())?;
        }
        let hook_exts: Vec<Arc<Extension>> = of(Kind::Hook).collect();
        let state_machines: Vec<Arc<Extension>> = of(Kind::StateMachine).collect();
        let hooks = HookRunner::new(&hook_exts, &config.hook_order, bus.clone());
        let id = session_id();
        let session = Session {
            id,
            bus,
            provider,
            model,
            models,
            tools,
            hooks,
            authority,
            interactions,
            history: Vec::new(),
            config,
            turns: 0,
            reloader: None,
            persistence: None,
            context_providers: of(Kind::ContextProvider).collect(),
            token_ratio: 1.0,
            warned_this_turn: false,
            cost_usd: 0.0,
            pending_reloads: Vec::new(),
            workflow: None,
            workflow_position: None,
            state_machines,
            usage: Usage {
                input_tokens: 0,
                output_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            },
        };
        Ok((session, warnings))
    }

    /// Say the session started (once its id is final: a resumed session
    /// keeps the id it had).
    pub fn announce(&self) {
        self.bus.record(KernelEvent::SessionStart {
            session_id: self.id.clone(),
            provider: self.provider.id().to_string(),
            model: self.model.clone(),
            mode: self.authority.mode().as_str().into(),
            tools: self.tools.names().into_iter().map(Into::into).collect(),
        });
    }

    /// Model parameters of every request.
    pub(crate) fn request_params(&self) -> RequestParams {
        RequestParams {
            model: self.model.clone(),
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            thinking: self.config.thinking,
            cache_hints: self.config.cache_hints,
        }
    }

    /// What the current model declares, if the provider listed it.
    pub(crate) fn capabilities(&self) -> Option<&ModelCapabilities> {
        self.models
            .iter()
            .find(|m| m.id == self.model)
            .map(|m| &m.capabilities)
    }

    /// Switch model (`/model`). The session's needs are checked against
    /// the new model first; a refused switch keeps the current one.
    pub fn set_model(&mut self, model: &str) -> Result<(), SessionError> {
        let info = find_model(&self.models, model, self.provider_id())?;
        check_session(
            self.provider_id(),
            &info.id,
            &info.capabilities,
            self.tools.len(),
        )?;
        // What the next request will carry (the conversation's images,
        // the thinking setting) must suit the new model as well.
        let next = Request {
            system: None,
            messages: self.history.clone(),
            tools: Vec::new(),
            params: RequestParams {
                model: info.id.clone(),
                ..self.request_params()
            },
        };
        check_request(self.provider_id(), &info.id, &info.capabilities, &next)?;
        let from = std::mem::replace(&mut self.model, info.id.clone());
        self.bus.record(KernelEvent::ModelChanged {
            provider: self.provider_id().into(),
            from,
            to: self.model.clone(),
        });
        Ok(())
    }

    /// Forget the conversation (the next turn starts a fresh one).
    pub fn clear_history(&mut self) {
        self.history.clear();
        self.bus.record(KernelEvent::HistoryCleared {
            session_id: self.id.clone(),
        });
    }

    /// The extension serving tool `name`.
    pub fn tool_extension(&self, name: &str) -> Option<Arc<Extension>> {
        self.tools.get(name).map(|t| t.ext.clone())
    }

    /// Hook registrations attached (for reports and benchmarks).
    pub fn hook_registrations(&self) -> usize {
        self.hooks.registrations()
    }

    /// One request straight to the provider, drained (benchmarks: the
    /// provider's share of a turn).
    pub async fn provider_round_trip(&self, text: &str) {
        use crate::runtime::bindings::stud::extension::types::{ContentPart, Role};
        let request = Request {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentPart::Text(text.into())],
            }],
            tools: self.tools.definitions(),
            params: self.request_params(),
        };
        if let Ok(mut stream) = self.provider.provider_send(&request).await {
            while let Ok(Some(_)) = self.provider.provider_next(&mut stream).await {}
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn provider_id(&self) -> &str {
        self.provider.id().as_str()
    }

    /// Watch for changed extensions from now on (see [`Reloader`]).
    pub fn set_reloader(&mut self, reloader: Arc<Reloader>) {
        self.reloader = Some(reloader);
    }

    /// `/reload`: look for changed extensions now; they are swapped in at
    /// the next boundary their reload behaviour allows.
    pub fn request_reload(&self) {
        if let Some(r) = &self.reloader {
            r.rescan(true);
        }
    }

    /// Swap in finished reloads. `boundary` names the stage about to
    /// start, or `between-turns`. Providers change only between turns (a
    /// response in progress belongs to the old instance).
    pub(crate) async fn apply_reloads(&mut self, boundary: &str) {
        let Some(reloader) = self.reloader.clone() else {
            return;
        };
        let mut ready = std::mem::take(&mut self.pending_reloads);
        ready.extend(reloader.finished().await);
        let between = boundary == "between-turns";
        for item in ready {
            let ext = item.ext.clone();
            let allowed = match ext.manifest.reload {
                ReloadBehavior::InTurn => between || ext.kind() != Kind::Provider,
                ReloadBehavior::BetweenTurns => between,
                ReloadBehavior::Never => false,
            };
            if !allowed {
                self.pending_reloads.push(item);
                continue;
            }
            let current = reloader.current(ext.id().as_str());
            if current.as_ref().is_some_and(|c| c.digest == ext.digest) {
                // Already serving these bytes.
                reloader.settle(&ext);
                continue;
            }
            if let Some(old) = &current
                && let Err(reason) = self.consent_to_growth(old, &ext).await
            {
                reloader.refuse(&ext, &reason);
                continue;
            }
            // The old version may have written its state since the new one
            // was compiled: carry the latest value over.
            if let Some(state) = current.and_then(|old| old.state())
                && let Err(e) = ext.restore_state(state)
            {
                reloader.refuse(&ext, &e);
                continue;
            }
            match self.swap(&ext).await {
                Ok(()) => reloader.swapped(&ext, &item.from, boundary),
                Err(reason) => reloader.refuse(&ext, &reason),
            }
        }
    }

    /// A new version that asks for more than the running one was granted
    /// needs the user's yes (interactive); headless it is refused.
    async fn consent_to_growth(&self, old: &Extension, new: &Extension) -> Result<(), String> {
        let added = consent::added(&old.manifest.capabilities, &new.manifest.capabilities);
        if added.is_empty() {
            return Ok(());
        }
        let asks = format!(
            "the new version of `{}` asks for more than it was granted: {}",
            new.id(),
            added.join("; ")
        );
        if self.interactions.is_headless() {
            return Err(format!(
                "{asks}; a headless run cannot ask, so the old version keeps running (restart stud interactively to grant it)"
            ));
        }
        let question = InteractionKind::Confirm(format!("{asks}. Allow it?"));
        match self.interactions.request(question).await {
            Answer::Response(r) if r.status == InteractionStatus::Accepted => Ok(()),
            _ => Err(format!(
                "{asks}; you declined, so the old version keeps running"
            )),
        }
    }

    async fn swap(&mut self, ext: &Arc<Extension>) -> Result<(), String> {
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
                for c in &mut self.context_providers {
                    if c.id() == ext.id() {
                        *c = ext.clone();
                    }
                }
                Ok(())
            }
            other => Err(format!(
                "reloading {other} extensions in a running session is not supported; restart stud to use the new version"
            )),
        }
    }

    /// Let queued observer hooks finish and record the end.
    pub async fn close(&mut self) {
        self.hooks.drain().await;
        self.bus.record(KernelEvent::SessionEnd {
            session_id: self.id.clone(),
            turns: self.turns,
        });
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

/// Time-ordered, unique enough for one machine.
fn session_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "s{:x}{:05x}",
        now.as_secs(),
        now.subsec_micros() ^ std::process::id()
    )
}
