//! `stud skills list`: the Agent Skills the model can load here, where
//! each is from, and the skill files that were skipped and why.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use crate::extensions::registry::project_dir;
use crate::kernel::skills::{SkillCatalog, listing};
use crate::paths::user_home;

#[derive(Subcommand)]
pub enum SkillsCommand {
    /// Every skill in scope (~/.stud/skills, ~/.agents/skills,
    /// ~/.claude/skills, and a trusted project's .stud/skills,
    /// .agents/skills, .claude/skills); exit 1 when a skill was skipped.
    List {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: SkillsCommand) -> anyhow::Result<ExitCode> {
    let SkillsCommand::List { json } = cmd;
    let (home, cwd, scope) = super::here()?;
    let (catalog, problems) = SkillCatalog::load(
        home.root(),
        user_home().as_deref(),
        &project_dir(&cwd),
        &scope,
    );
    if json {
        let skills: Vec<_> = catalog
            .all()
            .map(|s| {
                json!({
                    "name": s.name,
                    "description": s.description,
                    "origin": s.origin.word(),
                    "folder": s.folder,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"skills": skills, "problems": problems}))?
        );
    } else {
        outln!("{}", listing(&catalog));
        for p in &problems {
            errln!("warning: {p}");
        }
    }
    Ok(super::listed(&problems))
}
