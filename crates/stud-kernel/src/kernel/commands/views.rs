//! The documents `read(view)` returns, built from the live session.

use stud_protocol::session_view::{
    CommandView, ExtensionView, NetworkEntry, NetworkPolicy, Overview, SessionEntry, SessionList,
    ToolView, TrustView,
};

use super::turn_view::SessionsSource;
use super::{CommandEnv, Commands};
use crate::config::Layered;
use crate::extensions::ProjectScope;
use crate::kernel::md_commands::Origin;
use crate::kernel::session::Session;
use crate::kernel::usage::usage_event;
use crate::manifest::Kind;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};

pub(super) fn overview(commands: &Commands, session: &Session) -> Overview {
    let mut extensions: Vec<ExtensionView> = commands
        .env
        .loaded
        .iter()
        .map(|stale| {
            // A hot reload may have replaced it since start.
            let ext = session.current_extension(stale);
            let scope = commands
                .env
                .found
                .iter()
                .find(|d| d.manifest.id == *ext.id())
                .map_or("bundled", |d| d.scope.as_str());
            ExtensionView {
                id: ext.id().to_string(),
                kind: ext.kind().to_string(),
                version: ext.manifest.version.to_string(),
                scope: scope.to_string(),
                status: "loaded".into(),
                health: ext.health(),
            }
        })
        .collect();
    for entry in commands.catalogue.entries() {
        let instance = commands.instances.get(entry.id());
        extensions.push(ExtensionView {
            id: entry.id().to_string(),
            kind: Kind::Command.to_string(),
            version: entry.found.manifest.version.to_string(),
            scope: entry.scope.to_string(),
            status: if instance.is_some() {
                "loaded".into()
            } else {
                "not loaded yet (commands load at first use)".into()
            },
            health: instance.map(|e| e.health()).unwrap_or_default(),
        });
    }
    extensions.sort_by(|a, b| (&a.kind, &a.id).cmp(&(&b.kind, &b.id)));
    let tools = session
        .roster
        .tools
        .names()
        .into_iter()
        .filter_map(|name| {
            let t = session.roster.tools.get(name)?;
            Some(ToolView {
                name: name.to_string(),
                extension: t.runner.owner(),
                description: t.spec.description.clone(),
            })
        })
        .collect();
    let model = session.model().to_string();
    Overview {
        session_id: session.id.clone(),
        provider: session.provider_id().to_string(),
        mode: session.authority.mode().as_str().to_string(),
        state_machine: session.state_machine(),
        messages: session.history().len() as u64,
        context_tokens: session.context_tokens(),
        context_window: session
            .roster
            .capabilities()
            .map(|c| u64::from(c.context_window))
            .filter(|w| *w > 0),
        usage: usage_event(session.usage()),
        cost_usd: session
            .config
            .pricing
            .contains_key(&model)
            .then(|| session.cost_usd()),
        budget_usd: session.config.max_cost_usd,
        turns: session.ledger.turns,
        turn_running: false,
        tools,
        extensions,
        commands: commands
            .catalogue
            .entries()
            .iter()
            .map(|e| CommandView {
                name: e.name.to_string(),
                aliases: e.aliases.iter().map(ToString::to_string).collect(),
                description: e.description.clone(),
                argument_hint: e.argument_hint.clone(),
                extension: e.id().to_string(),
                scope: e.scope.to_string(),
                turn_safe: e.turn_safe,
            })
            .chain(commands.kernel_commands().map(|c| CommandView {
                name: c.name,
                aliases: Vec::new(),
                description: c.description,
                argument_hint: c.argument_hint,
                extension: "kernel".into(),
                scope: "bundled".into(),
                turn_safe: true,
            }))
            .chain(commands.markdown.all().map(|c| CommandView {
                name: c.name.clone(),
                aliases: Vec::new(),
                description: c.description.clone(),
                argument_hint: c.argument_hint.clone(),
                extension: format!("markdown: {}", c.file.display()),
                scope: match c.origin {
                    Origin::User => "global".into(),
                    Origin::Project => "project".into(),
                },
                turn_safe: false,
            }))
            .collect(),
        models: session.roster.models.iter().map(|m| m.id.clone()).collect(),
        mcp: session.mcp.views(),
        providers: commands
            .env
            .loaded
            .iter()
            .filter(|e| e.kind() == Kind::Provider)
            .map(|e| e.id().to_string())
            .collect(),
        state_machines: session
            .roster
            .state_machines
            .iter()
            .map(|e| e.id().to_string())
            .collect(),
        model,
    }
}

pub(super) async fn sessions(session: &Session) -> Result<SessionList, ExtError> {
    let source = session.conversation.log.as_ref().map(|log| SessionsSource {
        store: log.store.clone(),
        project_root: log.project_root.clone(),
        current: session.id.clone(),
        manifests: log.manifests.clone(),
    });
    sessions_of(source.as_ref()).await
}

pub(super) async fn sessions_of(source: Option<&SessionsSource>) -> Result<SessionList, ExtError> {
    let Some(log) = source else {
        return Err(ext_error(
            ErrorClass::Session,
            "no-store",
            "no session store is loaded, so sessions are not saved; enable the `filesystem` store",
        ));
    };
    log.manifests.flush().await;
    let mut all = log
        .store
        .store_list()
        .await
        .map_err(|e| ext_error(ErrorClass::Session, "store-failed", e.to_string()))?;
    all.retain(|s| {
        s.project_root == log.project_root
            && !crate::kernel::agent_catalog::is_child_id(&s.session_id)
    });
    all.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
    Ok(SessionList {
        current: log.current.clone(),
        sessions: all
            .into_iter()
            .map(|s| SessionEntry {
                id: s.session_id,
                title: s.title,
                updated_ms: s.updated_ms,
            })
            .collect(),
    })
}

pub(super) fn network_policy(env: &CommandEnv) -> Result<NetworkPolicy, ExtError> {
    let layered = Layered::load(
        &env.home.settings_file(),
        env.project.settings_layer().as_ref(),
    )
    .map_err(|e| ext_error(ErrorClass::Validation, "settings", e.to_string()))?;
    let mut extensions: Vec<NetworkEntry> = env
        .found
        .iter()
        .filter(|d| {
            let c = &d.manifest.capabilities;
            !c.network.is_empty() || c.user_hosts
        })
        .map(|d| {
            let id = d.manifest.id.as_str();
            NetworkEntry {
                id: id.to_string(),
                scope: d.scope.to_string(),
                manifest: d
                    .manifest
                    .capabilities
                    .network
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                user_hosts: d.manifest.capabilities.user_hosts,
                global: layered.global_network.get(id).cloned().unwrap_or_default(),
                project: layered.project_network.get(id).cloned().unwrap_or_default(),
            }
        })
        .collect();
    extensions.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(NetworkPolicy {
        settings_file: env.home.settings_file().display().to_string(),
        extensions,
    })
}

pub(super) fn trust(env: &CommandEnv) -> TrustView {
    let (folder, state, hint) = match &env.project {
        ProjectScope::None => (
            None,
            "no .stud folder",
            "this folder has no .stud/ (project settings and extensions); nothing to trust",
        ),
        ProjectScope::Untrusted(root) => (
            Some(root),
            "not trusted",
            "its settings and extensions are off; `stud trust grant` reviews and trusts them",
        ),
        ProjectScope::Trusted(root) => (
            Some(root),
            "trusted",
            "`stud trust revoke` turns its settings and extensions off again",
        ),
        ProjectScope::Changed(root) => (
            Some(root),
            "changed since trusted",
            "what it may do changed since you trusted it; `stud trust grant` reviews it again",
        ),
    };
    let project_extensions = folder
        .and_then(|root| std::fs::read_dir(root.join("extensions")).ok())
        .map(|dir| {
            let mut names: Vec<String> = dir
                .flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        })
        .unwrap_or_default();
    TrustView {
        folder: env.cwd.display().to_string(),
        state: state.into(),
        project_extensions,
        hint: hint.into(),
    }
}
