//! `stud ext ...`: list and check extensions.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::config::Settings;
use crate::digest::Sha256Digest;
use crate::extensions::UserGrants;
use crate::extensions::registry::project_dir;
use crate::extensions::{Discovered, Discovery, Registry};
use crate::manifest::{Capabilities, FsAccess, FsDir, Kind};
use crate::paths::StudHome;
use crate::runtime::inspect::ComponentInfo;
use crate::runtime::services::StderrServices;
use crate::runtime::{Extension, Runtime, RuntimeOptions};

#[derive(Subcommand)]
pub enum ExtCommand {
    /// List discovered extensions: id, kind, version, contract, scope,
    /// sha256 and capabilities.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Load, compile (or load from the cache) and start every extension,
    /// and report what happened to each.
    Check {
        #[arg(long)]
        json: bool,
        /// Compile everything, ignoring the compile cache.
        #[arg(long)]
        no_cache: bool,
    },
}

pub fn run(cmd: ExtCommand) -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let discovery = Discovery::scan(&home, Some(&cwd));
    match cmd {
        ExtCommand::List { json } => list(&discovery, json),
        ExtCommand::Check { json, no_cache } => {
            let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
            rt.block_on(check(home, project_dir(&cwd), &discovery, json, no_cache))
        }
    }
}

fn list(discovery: &Discovery, as_json: bool) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    for d in &discovery.found {
        let bytes = d
            .read_bytes()
            .with_context(|| format!("cannot read {}", d.component_path.display()))?;
        let digest = Sha256Digest::of(&bytes);
        let contract = ComponentInfo::inspect(&bytes)
            .ok()
            .and_then(|i| i.contract_version())
            .unwrap_or_else(|| "?".into());
        rows.push((d, digest, contract));
    }
    if as_json {
        let items: Vec<Value> = rows
            .iter()
            .map(|(d, digest, contract)| entry_json(d, digest, contract))
            .collect();
        let problems: Vec<String> = discovery.problems.iter().map(|p| p.to_string()).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"extensions": items, "problems": problems}))?
        );
    } else {
        println!(
            "{:<18} {:<17} {:<8} {:<9} {:<8} {:<13} CAPABILITIES",
            "ID", "KIND", "VERSION", "CONTRACT", "SCOPE", "SHA256"
        );
        for (d, digest, contract) in &rows {
            let m = &d.manifest;
            println!(
                "{:<18} {:<17} {:<8} {:<9} {:<8} {:<13} {}",
                m.id.as_str(),
                m.kind.as_str(),
                m.version.to_string(),
                contract,
                d.scope.as_str(),
                digest.short(),
                capabilities_text(&m.capabilities)
            );
        }
        for p in &discovery.problems {
            eprintln!("warning: {p}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn entry_json(d: &Discovered, digest: &Sha256Digest, contract: &str) -> Value {
    let m = &d.manifest;
    let caps = &m.capabilities;
    json!({
        "id": m.id.as_str(),
        "name": m.name,
        "kind": m.kind.as_str(),
        "version": m.version.to_string(),
        "contract": contract,
        "contract_range": m.contract.to_string(),
        "scope": d.scope.as_str(),
        "overrides": d.overrides.map(|s| s.as_str()),
        "location": d.location.display().to_string(),
        "sha256": digest.hex(),
        "capabilities": {
            "filesystem": caps.filesystem.iter().map(|f| json!({"dir": fs_dir(f.dir), "access": fs_access(f.access)})).collect::<Vec<_>>(),
            "network": caps.network.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            "exec": caps.exec,
            "secrets": caps.secrets,
        },
    })
}

fn fs_dir(d: FsDir) -> &'static str {
    match d {
        FsDir::Project => "project",
        FsDir::Data => "data",
    }
}

fn fs_access(a: FsAccess) -> &'static str {
    match a {
        FsAccess::Read => "read",
        FsAccess::ReadWrite => "read-write",
    }
}

/// `fs:project(read) net:api.example.com exec secret:KEY`, or `-`.
fn capabilities_text(caps: &Capabilities) -> String {
    let mut parts: Vec<String> = Vec::new();
    for f in &caps.filesystem {
        parts.push(format!("fs:{}({})", fs_dir(f.dir), fs_access(f.access)));
    }
    for h in &caps.network {
        parts.push(format!("net:{h}"));
    }
    if caps.exec {
        parts.push("exec".into());
    }
    for s in &caps.secrets {
        parts.push(format!("secret:{s}"));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

async fn check(
    home: StudHome,
    project: std::path::PathBuf,
    discovery: &Discovery,
    as_json: bool,
    no_cache: bool,
) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&home.settings_file())?;
    let configs = settings.extension_configs();
    let (grants, _) = UserGrants::from_settings(&settings);
    let cache_dir = (!no_cache).then(|| home.compile_cache_dir());
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir,
        pooling: true,
    })?;
    let registry = Registry {
        runtime: runtime.clone(),
        home,
        project_dir: project,
        services: Arc::new(StderrServices),
        configs,
        grants,
    };
    let report = registry.load_all(discovery).await;
    let mut results = Vec::new();
    let mut failed = report.failed.len();
    for ext in &report.loaded {
        match smoke(ext).await {
            Ok(summary) => results.push(json!({"id": ext.id().as_str(), "kind": ext.kind().as_str(), "status": "ok", "code": ext.code_source.as_str(), "summary": summary})),
            Err(e) => {
                failed += 1;
                results.push(json!({"id": ext.id().as_str(), "kind": ext.kind().as_str(), "status": "failed", "code": ext.code_source.as_str(), "error": e.to_string()}));
            }
        }
    }
    for (id, e) in &report.failed {
        results.push(json!({"id": id.as_str(), "status": "failed", "error": e.to_string()}));
    }
    let stats = runtime.cache_stats();
    let load = std::sync::atomic::Ordering::Relaxed;
    if as_json {
        let out = json!({
            "allocator": runtime.allocator().as_str(),
            "compiled": stats.compiled.load(load),
            "cache_hits": stats.cache_hits.load(load),
            "cache_discarded": stats.discarded.load(load),
            "extensions": results,
            "problems": discovery.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &results {
            let id = r["id"].as_str().unwrap_or("?");
            match r["status"].as_str() {
                Some("ok") => println!(
                    "ok      {id:<18} ({}) {}",
                    r["code"].as_str().unwrap_or("?"),
                    r["summary"].as_str().unwrap_or("")
                ),
                _ => println!("FAILED  {id:<18} {}", r["error"].as_str().unwrap_or("")),
            }
        }
        println!(
            "{} extensions, {} failed; allocator {}; {} compiled, {} from cache",
            results.len(),
            failed,
            runtime.allocator().as_str(),
            stats.compiled.load(load),
            stats.cache_hits.load(load)
        );
        for p in &discovery.problems {
            eprintln!("warning: {p}");
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Start the extension and make one harmless typed call of its kind.
async fn smoke(ext: &Extension) -> Result<String, crate::runtime::CallError> {
    ext.start().await?;
    Ok(match ext.kind() {
        Kind::Tool => {
            let spec = ext.tool_describe().await?;
            format!("tool `{}`", spec.name)
        }
        Kind::Provider => {
            let models = ext.provider_models().await?;
            format!(
                "models: {}",
                models
                    .iter()
                    .map(|m| m.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        Kind::Command => format!("command `{}`", ext.command_describe().await?.name),
        Kind::StateMachine => format!("entry stage `{}`", ext.sm_entry_stage().await?),
        Kind::Hook => format!("{} hook registration(s)", ext.manifest.hooks.len()),
        other => format!("{other} started"),
    })
}
