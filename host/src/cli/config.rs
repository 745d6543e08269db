//! `stud config show`: the effective settings and where each value came
//! from (global or project file).

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use serde_json::json;

use crate::config::Layered;
use crate::extensions::ProjectScope;
use crate::extensions::trust::recorded_scope;
use crate::paths::StudHome;

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// The merged settings, each value with the file it came from.
    Show {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: ConfigCommand) -> anyhow::Result<ExitCode> {
    let ConfigCommand::Show { json: as_json } = cmd;
    let home = StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let scope = recorded_scope(home.root(), &cwd);
    let layered = Layered::load(&home.settings_file(), scope.settings_layer().as_ref())?;
    if as_json {
        let values: Vec<_> = layered
            .provenance
            .iter()
            .map(|(path, from)| json!({"path": path, "value": layered.merged.pointer(path), "from": from}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"settings": layered.merged, "values": values, "warnings": layered.warnings})
            )?
        );
    } else {
        for (path, from) in &layered.provenance {
            let value = layered.merged.pointer(path).cloned().unwrap_or_default();
            outln!("{path} = {value}    ({from})");
        }
        if layered.provenance.is_empty() {
            outln!("(no settings; defaults apply)");
        }
    }
    for w in &layered.warnings {
        errln!("warning: {w}");
    }
    if let ProjectScope::Untrusted(dir) = scope {
        errln!(
            "note: {} is not trusted, so its settings are not shown",
            dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
