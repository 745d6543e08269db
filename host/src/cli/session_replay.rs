//! `stud session replay ID|--all`: re-run kept sessions from their traces
//! with the extensions installed now (or `--with ID=DIR` builds), no
//! provider, and tools that write or execute answered from the recording
//! (`--live-tools`: run in a throwaway copy of the project as it was
//! before the session's first change). Reports each divergence; exit 0
//! when nothing diverged, 1 when something did.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::extensions::trust::recorded_scope;
use crate::kernel::agents::is_child_id;
use crate::kernel::launch::ReplayLaunch;
use crate::kernel::replay::Replayer;
use crate::kernel::replay_run::drive::{Replayed, drive, first_model};
use crate::kernel::{LaunchOptions, Mode, launch};
use crate::paths::StudHome;
use crate::runtime::Extension;
use stud_protocol::replay_trace::TraceEntry;

#[derive(Args)]
pub struct ReplayArgs {
    /// The session to replay (`stud session list`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub id: Option<String>,
    /// Every session of this folder (newest first).
    #[arg(long)]
    pub all: bool,
    /// With --all: only sessions updated on or after this day (YYYY-MM-DD, UTC).
    #[arg(long, requires = "all", value_name = "DATE")]
    pub since: Option<String>,
    /// Run extension ID from the extension folder DIR (its `extension.toml`
    /// and built component) instead of the installed one. Repeatable.
    #[arg(long = "with", value_name = "ID=DIR")]
    pub with: Vec<String>,
    /// Run tools that write or execute for real, in a throwaway copy of the
    /// project, instead of giving their recorded results.
    #[arg(long)]
    pub live_tools: bool,
    /// The report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One session's replay.
enum Outcome {
    Replayed(Replayed),
    /// Kept before sessions kept traces, or never ran a turn.
    Untraced,
}

pub async fn run(store: &Arc<Extension>, here: &str, args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let substitutes = args
        .with
        .iter()
        .map(|w| parse_with(w))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let ids = match &args.id {
        Some(id) => vec![id.clone()],
        None => {
            let since = args
                .since
                .as_deref()
                .map(|d| crate::kernel::audit::day_start_ms("--since", d))
                .transpose()?;
            let mut all: Vec<_> = store
                .store_list()
                .await?
                .into_iter()
                .filter(|s| !is_child_id(&s.session_id) && s.project_root == here)
                .filter(|s| since.is_none_or(|t| s.updated_ms >= t))
                .collect();
            all.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
            all.into_iter().map(|s| s.session_id).collect()
        }
    };
    let mut diverged = false;
    let mut reports = Vec::new();
    for id in &ids {
        let started = std::time::Instant::now();
        let outcome = replay_one(store, &home, id, &substitutes, args.live_tools)
            .await
            .with_context(|| format!("cannot replay session `{id}`"))?;
        let ms = started.elapsed().as_millis() as u64;
        match outcome {
            Outcome::Untraced => {
                if args.json {
                    reports
                        .push(json!({"session_id": id, "replayed": false, "reason": "no trace"}));
                } else {
                    outln!(
                        "{id}: skipped (kept without a replay trace: recorded by an older stud, or no turn ran)"
                    );
                }
            }
            Outcome::Replayed(r) => {
                diverged |= !r.divergences.is_empty() || r.stopped.is_some();
                if args.json {
                    let mut v = serde_json::to_value(&r)?;
                    v["session_id"] = json!(id);
                    v["replayed"] = json!(true);
                    v["ms"] = json!(ms);
                    reports.push(v);
                } else {
                    print_report(id, &r, ms);
                }
            }
        }
    }
    if args.json {
        let out = match (&args.id, reports.len()) {
            (Some(_), 1) => reports.pop().unwrap_or(Value::Null),
            _ => Value::Array(reports),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if ids.is_empty() {
        outln!("(no sessions to replay)");
    }
    Ok(if diverged {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_report(id: &str, r: &Replayed, ms: u64) {
    let n = r.divergences.len();
    outln!(
        "{id}: replayed {} of {} turns in {ms} ms; {}",
        r.turns,
        r.recorded_turns,
        match n {
            0 => "no divergence".to_string(),
            1 => "1 divergence".to_string(),
            n => format!("{n} divergences"),
        }
    );
    for d in &r.divergences {
        outln!("  - {d}");
    }
    if let Some(why) = &r.stopped {
        outln!("  stopped: {why}");
    }
}

/// `ID=DIR`.
fn parse_with(w: &str) -> anyhow::Result<(String, PathBuf)> {
    match w.split_once('=') {
        Some((id, dir)) if !id.is_empty() && !dir.is_empty() => {
            let dir = std::path::absolute(dir)
                .with_context(|| format!("--with {w}: cannot resolve {dir}"))?;
            Ok((id.to_string(), dir))
        }
        _ => bail!("--with {w}: expected ID=DIR (an extension id and its folder)"),
    }
}

async fn replay_one(
    store: &Arc<Extension>,
    home: &StudHome,
    id: &str,
    substitutes: &[(String, PathBuf)],
    live_tools: bool,
) -> anyhow::Result<Outcome> {
    let data = store.store_read(id).await?;
    let manifest: Value = serde_json::from_str(&data.manifest)
        .with_context(|| format!("session `{id}`: its manifest is not JSON"))?;
    let recorded = stud_protocol::replay_trace::entries_of(&data.records);
    if !recorded
        .iter()
        .any(|e| matches!(e, TraceEntry::Input { .. }))
    {
        return Ok(Outcome::Untraced);
    }
    let project = PathBuf::from(manifest["project_root"].as_str().unwrap_or_default());
    if !project.is_dir() {
        bail!(
            "its project folder {} is not there; a replay runs in it",
            project.display()
        );
    }
    let (provider, model) = first_model(&recorded).unwrap_or_else(|| {
        let s = |k: &str| manifest[k].as_str().unwrap_or_default().to_string();
        (s("provider"), s("model"))
    });
    let mode = manifest["security_mode"]
        .as_str()
        .and_then(|m| m.parse::<Mode>().ok());
    let state_machine = manifest["state_machine"]["id"].as_str().map(str::to_string);
    let replayer = Arc::new(Replayer::new(&recorded, live_tools)?);
    // A live replay works on a copy: the project as it was before the
    // session's first change, when checkpoints kept it.
    let copy = if live_tools {
        Some(crate::kernel::replay_run::copy::throwaway_copy(
            home.root(),
            &project,
            id,
        )?)
    } else {
        None
    };
    let cwd = copy
        .as_ref()
        .map_or_else(|| project.clone(), |c| c.path().to_path_buf());
    let opts = LaunchOptions {
        provider: Some(provider),
        model: Some(model),
        mode,
        state_machine,
        // The project's settings and extensions as the session had them
        // (the copy is the same project).
        project: recorded_scope(home.root(), &project),
        replay: Some(ReplayLaunch {
            replayer,
            substitutes: substitutes.to_vec(),
        }),
        ..LaunchOptions::headless(home.clone(), cwd)
    };
    let mut launched = launch(opts).await?;
    let replayed = drive(&mut launched.session, &recorded).await;
    launched.shutdown().await;
    Ok(Outcome::Replayed(replayed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_needs_an_id_and_a_folder() {
        assert!(parse_with("guard").is_err());
        assert!(parse_with("=dir").is_err());
        let (id, dir) = parse_with("guard=/tmp/g").unwrap();
        assert_eq!(id, "guard");
        assert_eq!(dir, PathBuf::from("/tmp/g"));
    }
}
