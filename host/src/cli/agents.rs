//! `stud agents list`: the agents `task` can start here, where each is
//! defined, and the definition files that were left out and why.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use crate::config::Layered;
use crate::kernel::agents::AgentCatalog;

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// Every agent in scope (bundled, ~/.stud/agents, a trusted project's
    /// .stud/agents); exit 1 when a definition file was left out.
    List {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: AgentsCommand) -> anyhow::Result<ExitCode> {
    let AgentsCommand::List { json } = cmd;
    let (home, _, scope) = super::here()?;
    let layered = Layered::load(&home.settings_file(), scope.settings_layer().as_ref())?;
    let (catalog, problems) = AgentCatalog::load(home.root(), &scope, &layered.settings.agents);
    if json {
        let agents: Vec<_> = catalog
            .all()
            .map(|d| {
                json!({
                    "name": d.name,
                    "description": d.description,
                    "source": d.source.describe(),
                    "tools": d.tools,
                    "model": d.model,
                    "maxIterations": d.max_iterations,
                    "mode": d.mode.map(|m| m.as_str()),
                    "stateMachine": d.state_machine,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"agents": agents, "problems": problems}))?
        );
    } else {
        for d in catalog.all() {
            let tools = match &d.tools {
                Some(t) => t.join(", "),
                None => "the parent's".into(),
            };
            outln!("{}  ({})", d.name, d.source.describe());
            outln!("  {}", d.description);
            outln!(
                "  tools: {tools}; model: {}",
                d.model.as_deref().unwrap_or("the parent's")
            );
        }
        for p in &problems {
            errln!("warning: {p}");
        }
    }
    Ok(super::listed(&problems))
}
