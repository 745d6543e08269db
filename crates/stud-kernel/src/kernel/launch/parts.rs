//! Phase 5: the session's parts, each built once from what the earlier
//! phases made: commands, authority, configuration, agents,
//! MCP servers, the reloader and its store.

use std::sync::Arc;

use tracing::Instrument as _;

use super::configure::{Configured, profile_of, resumed_mode};
use super::discover::Found;
use super::load::Loaded;
use super::prelink::prelink_rest;
use super::session_config::{provider_named_by, session_config};
use super::subscribe::Subscribed;
use super::{LaunchError, LaunchOptions, ProviderPick};
use crate::extensions::registry::project_dir;
use crate::extensions::watch::{Watch, watch};
use crate::kernel::Authority;
use crate::kernel::agent_catalog::AgentCatalog;
use crate::kernel::commands::{CommandEnv, Commands};
use crate::kernel::editor_files::EditorRoute;
use crate::kernel::mcp_hub::{self, McpHub, NewTools};
use crate::kernel::named;
use crate::kernel::reload::Reloader;
use crate::kernel::session::SessionParts;
use crate::kernel::skills::{SKILL_TOOL, SkillCatalog};
use crate::manifest::Kind;
use crate::mcp::McpServers;

/// The session's parts, and what serves the session beside it.
pub(super) struct Parts {
    pub session: SessionParts,
    pub commands: Commands,
    pub provider_pick: ProviderPick,
    /// Extension folders being watched for hot reload.
    pub watch: Option<Watch>,
}

pub(super) async fn assemble(
    opts: &LaunchOptions,
    configured: &Configured,
    found: &Found,
    loaded: &mut Loaded,
    subscribed: &Subscribed,
    warnings: &mut Vec<String>,
) -> Result<Parts, LaunchError> {
    let (settings, bus) = (&configured.settings, &found.bus);
    let interactions = subscribed.interactions.clone();
    let (skills, skill_warnings) = SkillCatalog::load(
        opts.home.root(),
        crate::paths::user_home().as_deref(),
        &project_dir(&opts.cwd),
        &opts.project,
    );
    warnings.extend(skill_warnings);
    let skills = Arc::new(skills);
    let (commands, command_warnings) = Commands::new(
        CommandEnv {
            skills: skills.clone(),
            home: opts.home.clone(),
            cwd: project_dir(&opts.cwd),
            project: opts.project.clone(),
            found: found
                .discovery
                .found
                .iter()
                .filter(|d| loaded.keeps(&d.manifest, d.scope))
                .cloned()
                .collect(),
            loaded: loaded.exts.clone(),
        },
        settings.commands.clone(),
        found.registry.clone(),
        found.services.commands.clone(),
        bus.clone(),
        interactions.clone(),
    );
    warnings.extend(command_warnings);
    // A resumed session never gets looser than it was started: the
    // stricter of its stored mode and what this run asks for.
    // From a store other people write, the record can only make this run
    // stricter than it asks.
    let mode = match loaded.resumed.as_ref().map(|r| (r.mode, r.shared)) {
        Some((Some(stored), true)) => stored.stricter(configured.mode),
        Some((Some(stored), false)) => stored.stricter(resumed_mode(
            configured.mode,
            configured.mode_asked,
            &loaded.set,
        )?),
        _ => configured.mode,
    };
    let authority = Authority::new(mode, configured.allowlist.clone(), bus.clone())
        .with_settings_file(opts.home.settings_file());
    let profile = profile_of(&loaded.set);
    let (config, provider_pick) = session_config(
        opts,
        settings,
        profile,
        &loaded.exts,
        &configured.global_hook_order,
    )?;
    named::check(
        &loaded.exts,
        Kind::Provider,
        &config.provider,
        provider_named_by(opts, profile, settings, &configured.provenance),
        "active.provider",
    )
    .map_err(|e| LaunchError::Setting(e.to_string()))?;
    prelink_rest(
        &loaded.exts,
        &config.provider,
        &loaded.uis,
        opts.render,
        &subscribed.first_request,
    );
    // The agents `task` can start; offered unless tools are off,
    // `agents.enabled` is false or the extension set leaves it out.
    let (agents, agent_warnings) =
        AgentCatalog::load(opts.home.root(), &opts.project, &settings.agents);
    warnings.extend(agent_warnings);
    let offer_task = !opts.no_tools
        && settings.agents.enabled != Some(false)
        && loaded.set.as_ref().is_none_or(|s| s.keeps_task())
        && !agents.is_empty();
    let offer_skill = !opts.no_tools
        && !skills.is_empty()
        && loaded
            .set
            .as_ref()
            .is_none_or(|s| s.keeps_kernel_tool(SKILL_TOOL));
    let mut config = config;
    config.skills = skills;
    let (mcp, mcp_tools) = if opts.no_tools {
        (Arc::new(McpHub::default()), NewTools::new())
    } else {
        let mut servers = McpServers::discover(&opts.home, &opts.project, &opts.cwd);
        servers.add(&opts.editor_mcp);
        // A store that does not start is said before any server starts
        // or asks to be trusted.
        if !servers.servers.is_empty() {
            loaded.store(warnings).await?;
        }
        start_mcp(opts, servers, bus, &interactions, warnings).await
    };
    let (reloader, watch) = reloader(opts, found, loaded, warnings);
    Ok(Parts {
        session: SessionParts {
            id: loaded.resumed.as_ref().map(|r| r.session_id.clone()),
            config,
            authority,
            interactions,
            bus: bus.clone(),
            first_request: subscribed.first_request.clone(),
            extension_set: loaded.set.clone(),
            editor: opts.editor_files.clone().map(|files| EditorRoute {
                files,
                project: project_dir(&opts.cwd),
            }),
            agents: Arc::new(agents),
            offer_task,
            offer_skill,
            mcp,
            mcp_tools,
            reloader: Some(reloader),
            checkpoints: checkpoint_place(opts, &settings.checkpoints)
                .filter(|_| opts.replay.is_none()),
        },
        commands,
        provider_pick,
        watch,
    })
}

/// The session's MCP servers. A headless run waits for them (each within
/// its start timeout): a script expects their tools in its first request.
/// An interactive session goes on; tools join at the first stage boundary
/// after their server is up.
async fn start_mcp(
    opts: &LaunchOptions,
    servers: McpServers,
    bus: &crate::kernel::events::Bus,
    interactions: &Arc<crate::kernel::interaction::Interactions>,
    warnings: &mut Vec<String>,
) -> (Arc<McpHub>, NewTools) {
    let (hub, mcp_warnings) =
        mcp_hub::start(&opts.home, servers, &opts.cwd, bus, Some(interactions))
            .instrument(tracing::debug_span!("mcp_start"))
            .await;
    warnings.extend(mcp_warnings);
    let mut tools = NewTools::new();
    if interactions.is_headless() || opts.settle_mcp {
        let (settled, started_warnings) = hub
            .settle()
            .instrument(tracing::debug_span!("mcp_settle"))
            .await;
        warnings.extend(started_warnings);
        tools = settled;
    }
    (Arc::new(hub), tools)
}

/// The reloader, and the watch on extension folders that feeds it.
fn reloader(
    opts: &LaunchOptions,
    found: &Found,
    loaded: &Loaded,
    warnings: &mut Vec<String>,
) -> (Arc<Reloader>, Option<Watch>) {
    let discovery = &found.discovery;
    let reloader = Reloader::new(
        found.registry.clone(),
        opts.home.clone(),
        opts.project.clone(),
        found.bus.clone(),
        &loaded.exts,
        discovery
            .found
            .iter()
            .map(|d| (d.manifest.id.to_string(), d.scope))
            .collect(),
    );
    // A headless run whose extensions are all bundled has nothing a watch
    // could reload (their code is in the binary, and one installed while
    // the session runs waits for the next start anyway), and a process
    // holding an inotify instance is reaped only after the kernel's grace
    // period for it: 2-10 ms here, up to 37 ms (docs/benchmarks.md). Such
    // a run does not watch; `/reload` still looks.
    let on_disk = discovery
        .found
        .iter()
        .any(|d| d.scope != crate::extensions::Scope::Bundled);
    let watch = if opts.watch && (on_disk || !opts.headless) {
        let r = reloader.clone();
        match tracing::debug_span!("watch")
            .in_scope(|| watch(&reloader.roots(), move || r.rescan(false)))
        {
            Ok(w) => Some(w),
            Err(e) => {
                warnings.push(format!(
                    "extension folders are not watched ({e}); use /reload after changing one"
                ));
                None
            }
        }
    } else {
        None
    };
    (reloader, watch)
}

/// Where the session's checkpoints go, from `checkpoints.*`; `None` when
/// they are off.
fn checkpoint_place(
    opts: &LaunchOptions,
    s: &crate::config::Checkpoints,
) -> Option<crate::kernel::session::CheckpointPlace> {
    use crate::kernel::checkpoints::CheckpointSettings;
    // One reading of the settings for sessions and headless rewinds alike.
    let settings = CheckpointSettings::from_config(s);
    settings
        .enabled
        .then(|| crate::kernel::session::CheckpointPlace {
            home: opts.home.root().to_path_buf(),
            project: project_dir(&opts.cwd),
            settings,
        })
}
