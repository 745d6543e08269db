//! `stud session list|show|delete`: sessions kept by the active session
//! store (only the store extensions are loaded).

use crate::kernel::agents::is_child_of;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Subcommand;
use serde_json::Value;

use crate::config::Layered;
use crate::extensions::registry::project_dir;
use crate::extensions::trust::recorded_scope;
use crate::extensions::{Discovery, Registry, UserGrants};
use crate::kernel::named::NamedBy;
use crate::manifest::Kind;
use crate::paths::StudHome;
use crate::runtime::services::StderrServices;
use crate::runtime::{Extension, Runtime, RuntimeOptions};

#[derive(Subcommand)]
pub enum SessionCommand {
    /// This folder's sessions, newest first.
    List {
        /// Every session the store keeps: every project's, and with a
        /// store several machines share, every machine's.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// One session as a person reads it: messages, tool calls with result summaries, usage.
    Show {
        id: String,
        /// The raw manifest and log records instead (JSON).
        #[arg(long)]
        json: bool,
        /// What each extension cost instead: calls, CPU, time in the host,
        /// peak memory, network, a provider's tokens and cost.
        #[arg(long)]
        stats: bool,
    },
    /// Go back to before a turn: its files (every change since, shell commands' too), its conversation, or both.
    /// Says what it would restore unless --yes.
    Rewind {
        id: String,
        /// The turn to go back to before (`stud session show` numbers them).
        turn: u64,
        /// Only the files.
        #[arg(long, conflicts_with = "conversation")]
        files: bool,
        /// Only the conversation.
        #[arg(long)]
        conversation: bool,
        /// Do it (without it, only say what it would do).
        #[arg(long)]
        yes: bool,
        /// Also overwrite files changed since the turn (else they are kept and named).
        #[arg(long)]
        overwrite: bool,
    },
    /// Re-run a kept session (or --all of this folder's) from its trace with the extensions
    /// installed now or --with builds, and report every divergence. Exit 1 when something diverged.
    Replay(super::session_replay::ReplayArgs),
    /// Delete a session for good.
    Delete { id: String },
}

pub(super) async fn store() -> anyhow::Result<(Arc<Extension>, String)> {
    let home = StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let scope = recorded_scope(home.root(), &cwd);
    let layered = Layered::load(&home.settings_file(), scope.settings_layer().as_ref())?;
    let mut discovery = Discovery::scan(&home, &scope);
    discovery
        .found
        .retain(|d| d.manifest.kind == Kind::SessionStore);
    let (grants, _) = UserGrants::from_layers(&layered);
    let registry = Arc::new(Registry {
        runtime: Runtime::new(RuntimeOptions {
            cache: Some(home.compile_cache()),
            pooling: false,
        })?,
        home: home.clone(),
        project_dir: project_dir(&cwd),
        services: Arc::new(StderrServices),
        configs: layered.settings.extension_configs(),
        fallback_configs: layered.global_configs,
        grants,
    });
    let report = registry.load_all(discovery.found).await;
    let wanted = layered.settings.active.session_store.as_deref();
    for (id, e) in &report.failed {
        if Some(id.as_str()) != wanted {
            errln!("warning: {e}");
        }
    }
    let failed: Vec<(String, String)> = report
        .failed
        .iter()
        .map(|(id, e)| (id.to_string(), e.to_string()))
        .collect();
    // The same choice a session makes: the person's own store, started,
    // or the fallback they named.
    let mut warnings = Vec::new();
    let store = crate::kernel::launch::store_choice::started(
        &layered.settings,
        wanted,
        NamedBy::setting(&layered.provenance, "/active/sessionStore"),
        &report.loaded,
        &failed,
        &mut warnings,
    )
    .await?;
    for w in warnings {
        errln!("warning: {w}");
    }
    let Some(store) = store else {
        bail!("no session store is loaded; enable the `filesystem` store");
    };
    Ok((store, project_dir(&cwd).display().to_string()))
}

pub fn run(cmd: SessionCommand) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async {
        let (store, here) = store().await?;
        match cmd {
            SessionCommand::List { all: every, json } => {
                let all = store.store_list().await?;
                super::session_list::print(&all, &here, every, json)?;
            }
            SessionCommand::Show { id, json, stats } => {
                let data = store.store_read(&id).await?;
                let manifest: Value = serde_json::from_str(&data.manifest)
                    .with_context(|| format!("session `{id}`: its manifest is not JSON"))?;
                if stats {
                    if json {
                        println!("{}", serde_json::to_string_pretty(&manifest["metering"])?);
                    } else {
                        for line in super::session_show::stats_lines(&manifest) {
                            outln!("{line}");
                        }
                    }
                } else if json {
                    println!("{}", serde_json::to_string_pretty(&manifest)?);
                    for r in &data.records {
                        println!("{r}");
                    }
                } else {
                    for line in super::session_show::readable(&manifest, &data.records) {
                        outln!("{line}");
                    }
                    let home = StudHome::resolve()?;
                    let project = manifest["project_root"].as_str().unwrap_or_default();
                    let journal = crate::kernel::checkpoints::journal_of(
                        home.root(),
                        std::path::Path::new(project),
                        &id,
                    );
                    for line in super::session_show::checkpoint_lines(&journal.read()) {
                        outln!("{line}");
                    }
                    for line in agent_tree(&store, &id).await? {
                        outln!("{line}");
                    }
                }
            }
            SessionCommand::Rewind {
                id,
                turn,
                files,
                conversation,
                yes,
                overwrite,
            } => {
                use crate::kernel::rewind::{Scope, StoredRewind, rewind_stored};
                let scope = match (files, conversation) {
                    (true, _) => Scope::Files,
                    (_, true) => Scope::Conversation,
                    _ => Scope::Both,
                };
                let home = StudHome::resolve()?;
                let lines = rewind_stored(StoredRewind {
                    store: &store,
                    home: home.root(),
                    id: &id,
                    turn,
                    scope,
                    yes,
                    overwrite,
                })
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
                for line in lines {
                    outln!("{line}");
                }
            }
            SessionCommand::Replay(args) => {
                return super::session_replay::run(&store, &here, args).await;
            }
            SessionCommand::Delete { id } => {
                if let Ok(data) = store.store_read(&id).await
                    && let Ok(manifest) = serde_json::from_str::<Value>(&data.manifest)
                    && let Some(project) = manifest["project_root"].as_str()
                {
                    // Its checkpoints go with it (their contents at the next prune).
                    let home = StudHome::resolve()?;
                    let journal = crate::kernel::checkpoints::journal_of(
                        home.root(),
                        std::path::Path::new(project),
                        &id,
                    );
                    let _ = std::fs::remove_file(journal.path());
                }
                store.store_delete(&id).await?;
                outln!("deleted {id}");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The child sessions under `id`, depth first, one line each, indented
/// by depth (`stud session show`).
async fn agent_tree(store: &crate::runtime::Extension, id: &str) -> anyhow::Result<Vec<String>> {
    let all = store.store_list().await?;
    let mut lines = Vec::new();
    let mut stack: Vec<(String, usize)> = children_of(&all, id)
        .into_iter()
        .rev()
        .map(|c| (c, 1))
        .collect();
    while let Some((child, depth)) = stack.pop() {
        let manifest: Value = match store.store_read(&child).await {
            Ok(d) => serde_json::from_str(&d.manifest).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if lines.is_empty() {
            lines.push(String::new());
            lines.push("agents:".into());
        }
        lines.push(format!(
            "{}{}",
            "  ".repeat(depth),
            super::session_show::agent_line(&child, &manifest)
        ));
        for c in children_of(&all, &child).into_iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    Ok(lines)
}

fn children_of(all: &[crate::runtime::domain::SessionSummary], id: &str) -> Vec<String> {
    let mut c: Vec<_> = all
        .iter()
        .filter(|s| is_child_of(&s.session_id, id))
        .map(|s| (s.created_ms, s.session_id.clone()))
        .collect();
    c.sort();
    c.into_iter().map(|(_, id)| id).collect()
}
