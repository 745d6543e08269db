//! `stud trust list|grant|revoke` and the first-run trust prompt.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;

use crate::extensions::ProjectScope;
use crate::extensions::review::ProjectReview;
use crate::extensions::trust::{Decision, TrustStore, project_stud_dir, recorded_scope, review};
use crate::kernel::md_commands::MarkdownCommands;
use crate::kernel::skills::SkillCatalog;
use crate::paths::StudHome;

#[derive(Subcommand)]
pub enum TrustCommand {
    /// Every project with a recorded decision.
    List,
    /// Trust a project's `.stud/` (default: the current folder).
    Grant { path: Option<PathBuf> },
    /// Stop trusting it (its `.stud/` is skipped from then on).
    Revoke { path: Option<PathBuf> },
}

fn stud_dir(path: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let cwd = match path {
        Some(p) => p,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    project_stud_dir(&cwd).with_context(|| {
        format!(
            "{} has no .stud folder; there is nothing to trust",
            cwd.display()
        )
    })
}

pub fn run(cmd: TrustCommand) -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let store = TrustStore::new(home.root());
    match cmd {
        TrustCommand::List => {
            for e in store.list()? {
                let d = match e.decision {
                    Decision::Trusted => "trusted ",
                    Decision::Declined => "declined",
                };
                outln!("{d}  {}", e.canonical_path);
            }
        }
        TrustCommand::Grant { path } => {
            let dir = stud_dir(path)?;
            let review = review(home.root(), &dir);
            outln!("trusting {}; it may:", dir.display());
            for line in summary(&dir, &review) {
                outln!("  - {line}");
            }
            store.record(&dir, Decision::Trusted, Some(review.digest()))?;
            outln!("trusted {}", dir.display());
        }
        TrustCommand::Revoke { path } => {
            let dir = stud_dir(path)?;
            store.record(&dir, Decision::Declined, None)?;
            outln!("no longer trusted: {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What the project folder would add, without running any of it: every
/// security-relevant item in plain words, then what else it holds.
fn summary(dir: &Path, review: &ProjectReview) -> Vec<String> {
    let mut out: Vec<String> = review.lines();
    if dir.join("settings.json").is_file() {
        out.push("settings.json (overrides your settings for this project)".to_string());
    }
    out.extend(brought(dir));
    if out.is_empty() {
        out.push("nothing yet (an empty .stud folder)".to_string());
    }
    out
}

/// What the project brings from other agents' layouts besides `.stud/`:
/// its Agent Skills and Markdown commands (read only once it is trusted).
fn brought(dir: &Path) -> Vec<String> {
    let Some(project) = dir.parent() else {
        return Vec::new();
    };
    let as_trusted = ProjectScope::Trusted(dir.to_path_buf());
    let (skills, _) = SkillCatalog::load(Path::new("/nonexistent"), None, project, &as_trusted);
    let (commands, _) = MarkdownCommands::load(
        Path::new("/nonexistent"),
        None,
        project,
        &as_trusted,
        &Default::default(),
    );
    let mut out = Vec::new();
    let skills: Vec<String> = skills.all().map(|s| s.name.clone()).collect();
    if !skills.is_empty() {
        out.push(format!(
            "Agent Skills the model may load: {} (.stud/skills, .agents/skills, .claude/skills)",
            skills.join(", ")
        ));
    }
    let commands: Vec<String> = commands.all().map(|c| c.name.clone()).collect();
    if !commands.is_empty() {
        out.push(format!(
            "Markdown commands: {} (.stud/commands, .claude/commands)",
            commands.join(", ")
        ));
    }
    out
}

/// The project scope for a run: the recorded decision, or (interactive
/// runs only) the user's answer now. Headless runs never prompt and
/// `--yolo` does not answer this: an untrusted `.stud/` is skipped, and a
/// trusted one whose security review changed runs without those items,
/// with a notice.
pub fn decide(home: &StudHome, cwd: &Path, headless: bool) -> anyhow::Result<ProjectScope> {
    let scope = recorded_scope(home.root(), cwd);
    let (ProjectScope::Untrusted(dir) | ProjectScope::Changed(dir)) = &scope else {
        return Ok(scope);
    };
    if headless || !std::io::stdin().is_terminal() {
        return Ok(scope);
    }
    let store = TrustStore::new(home.root());
    let review = review(home.root(), dir);
    if matches!(scope, ProjectScope::Changed(_)) {
        errln!(
            "{} is trusted, but what it may do changed since you accepted it:",
            dir.display()
        );
    } else {
        errln!("{} holds project configuration:", dir.display());
    }
    for line in summary(dir, &review) {
        errln!("  - {line}");
    }
    if store.decision(dir)? == Some(Decision::Declined) {
        errln!("You declined this project before.");
    }
    errout!("Read and run it? [t]rust / trust [o]nce / [d]ecline: ");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok();
    Ok(match line.trim().to_ascii_lowercase().as_str() {
        "t" | "trust" => {
            store.record(dir, Decision::Trusted, Some(review.digest()))?;
            ProjectScope::Trusted(dir.clone())
        }
        "o" | "once" => ProjectScope::Trusted(dir.clone()),
        _ => {
            store.record(dir, Decision::Declined, None)?;
            ProjectScope::Untrusted(dir.clone())
        }
    })
}
