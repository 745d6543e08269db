//! The session's configuration and provider: flags over the profile over
//! settings over defaults.

use std::sync::Arc;

use super::{KEY_PROVIDERS, LaunchError, LaunchOptions, ProviderPick};
use crate::config::{Profile, Settings};
use crate::extensions::Scope;
use crate::kernel::compaction::CompactionConfig;
use crate::kernel::hooks::HookOrder;
use crate::kernel::named::NamedBy;
use crate::kernel::retry::RetryPolicy;
use crate::kernel::session::{
    DEFAULT_MAX_ITERATIONS, DEFAULT_TOOL_OUTPUT_LIMIT, DEFAULT_TOOL_PARALLELISM, SessionConfig,
};
use crate::manifest::Kind;
use crate::runtime::Extension;
use crate::runtime::domain::ThinkingLevel;

/// The provider: flags over the profile over settings; with none of
/// them, the first provider whose key variable is set, else the offline
/// demo (`scripted`).
pub(super) fn pick_provider(
    opts: &LaunchOptions,
    settings: &Settings,
    profile: Option<&Profile>,
    exts: &[Arc<Extension>],
) -> (String, ProviderPick) {
    if let Some(p) = opts
        .provider
        .clone()
        .or(profile.and_then(|p| p.provider.clone()))
        .or(settings.active.provider.clone())
    {
        return (p, ProviderPick::Chosen);
    }
    let loaded = |id: &str| {
        exts.iter()
            .any(|e| e.kind() == Kind::Provider && e.id().as_str() == id)
    };
    for (var, id) in KEY_PROVIDERS {
        let set = std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
        if set && loaded(id) {
            return (id.to_string(), ProviderPick::FromKey { var });
        }
    }
    ("scripted".into(), ProviderPick::OfflineDemo)
}

/// Where the provider's name came from, in the order `pick_provider`
/// reads them.
pub(super) fn provider_named_by(
    opts: &LaunchOptions,
    profile: Option<&Profile>,
    settings: &Settings,
    provenance: &std::collections::BTreeMap<String, String>,
) -> NamedBy {
    if opts.provider.is_some() {
        NamedBy::CommandLine
    } else if profile.is_some_and(|p| p.provider.is_some()) {
        NamedBy::Settings(Scope::Global)
    } else if settings.active.provider.is_some() {
        NamedBy::setting(provenance, "/active/provider")
    } else {
        NamedBy::Default
    }
}

/// The session's configuration: flags over the profile over settings over
/// defaults.
pub(super) fn session_config(
    opts: &LaunchOptions,
    settings: &Settings,
    profile: Option<&Profile>,
    exts: &[Arc<Extension>],
    global_hook_order: &[String],
) -> Result<(SessionConfig, ProviderPick), LaunchError> {
    let (provider, pick) = pick_provider(opts, settings, profile, exts);
    Ok((
        SessionConfig {
            provider,
            model: opts
                .model
                .clone()
                .or(profile.and_then(|p| p.model.clone()))
                .or(settings.active.model.clone()),
            max_iterations: opts
                .max_iterations
                .or(settings.runtime.continuation.max_iterations)
                .unwrap_or(DEFAULT_MAX_ITERATIONS)
                .max(1),
            tool_parallelism: opts
                .tool_parallelism
                .or(settings.runtime.tool_parallelism)
                .unwrap_or(DEFAULT_TOOL_PARALLELISM)
                .max(1),
            tool_output_limit: settings
                .runtime
                .tool_output_limit
                .unwrap_or(DEFAULT_TOOL_OUTPUT_LIMIT)
                .max(1024),
            response_limits: crate::kernel::response_limits::ResponseLimits::from_settings(
                &settings.runtime.response_limits,
            ),
            system_prompt: settings.system_prompt.clone(),
            hook_order: HookOrder::of(&settings.ordering.hooks, global_hook_order),
            tools_enabled: !opts.no_tools,
            retry: RetryPolicy::from_settings(&settings.runtime.retries),
            max_tokens: settings.active.max_tokens,
            temperature: settings.active.temperature,
            thinking: match settings.active.thinking.as_deref() {
                None | Some("off") => ThinkingLevel::Off,
                Some("low") => ThinkingLevel::Low,
                Some("medium") => ThinkingLevel::Medium,
                Some("high") => ThinkingLevel::High,
                Some(other) => {
                    return Err(LaunchError::Setting(format!(
                        "settings.json: active.thinking: `{other}` is not a thinking level; use \"off\", \"low\", \"medium\" or \"high\""
                    )));
                }
            },
            skills: Default::default(),
            cache_hints: settings.active.cache_hints.unwrap_or(false),
            compaction: CompactionConfig::from_settings(&settings.compaction),
            pricing: settings.pricing.clone(),
            max_cost_usd: opts.max_cost_usd.or(settings.budget.max_cost_usd),
        },
        pick,
    ))
}
