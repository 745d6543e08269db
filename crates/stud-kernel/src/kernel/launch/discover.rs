//! Phase 2: the engine and the extension folders, read side by side, and
//! the registry that loads from them.

use std::sync::Arc;

use super::configure::Configured;
use super::{LaunchError, LaunchOptions};
use crate::extensions::registry::project_dir;
use crate::extensions::{Discovery, Registry};
use crate::kernel::events::Bus;
use crate::kernel::redact::Redactor;
use crate::kernel::services::KernelServices;
use crate::runtime::{Runtime, RuntimeError, RuntimeOptions};

/// What is installed and what loads it.
pub(super) struct Found {
    pub bus: Bus,
    pub services: Arc<KernelServices>,
    pub discovery: Discovery,
    pub registry: Arc<Registry>,
}

pub(super) async fn discover(
    opts: &LaunchOptions,
    configured: &Configured,
    warnings: &mut Vec<String>,
) -> Result<Found, LaunchError> {
    let bus = Bus::new();
    let services = Arc::new(KernelServices::new(bus.clone(), opts.terminal));
    // The engine is made while discovery reads the folders: neither needs
    // the other (`start_work`: on a worker, idle this early).
    let cache = opts.home.compile_cache();
    let span = tracing::debug_span!("runtime");
    let engine = crate::runtime::start_work::spawn(move || {
        span.in_scope(|| {
            Runtime::new(RuntimeOptions {
                cache: Some(cache),
                // Measured (docs/benchmarks.md): a session makes about ten
                // instances, each as fast on demand as from the pool, while
                // reserving the pool costs 3-7 ms at start and its
                // terabyte of address space about 1.5 ms at exit.
                pooling: false,
            })
        })
    });
    let mut discovery =
        tracing::debug_span!("discovery").in_scope(|| Discovery::scan(&opts.home, &opts.project));
    if let Some(replay) = &opts.replay {
        bus.set_replayer(replay.replayer.clone());
        for (id, dir) in &replay.substitutes {
            discovery.substitute(id, dir)?;
        }
    }
    let runtime = engine
        .await
        .map_err(|e| RuntimeError::Engine(format!("making the engine panicked: {e}")))??;
    warnings.extend(runtime.cache_problem().map(str::to_string));
    warnings.extend(discovery.problems.iter().map(|p| p.to_string()));
    warnings.extend(configured.grant_warnings.iter().cloned());
    let grants = &configured.grants;
    bus.set_redactor(Redactor::new(
        grants.all_values(discovery.found.iter().map(|d| &d.manifest)),
    ));
    let settings = &configured.settings;
    let registry = Arc::new(Registry {
        runtime,
        home: opts.home.clone(),
        project_dir: project_dir(&opts.cwd),
        services: services.clone(),
        configs: crate::kernel::claude_hooks::with_claude_hooks(
            crate::extensions::grants::with_guard_grants(
                settings.extension_configs(),
                &settings.protected_paths.allow,
            ),
            &configured.global_configs,
            &opts.project,
            &project_dir(&opts.cwd),
            warnings,
        ),
        fallback_configs: configured.global_configs.clone(),
        grants: grants.clone(),
    });
    warnings.extend(
        registry.configs.misfiled(
            discovery
                .found
                .iter()
                .map(|d| (d.manifest.kind, d.manifest.id.as_str())),
        ),
    );
    Ok(Found {
        bus,
        services,
        discovery,
        registry,
    })
}
