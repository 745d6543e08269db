//! `/tools`: list the tools the model can call, with the extension that provides each.
use stud_sdk::host::session;
use stud_sdk::prelude::*;

#[derive(Default)]
struct Tools;

impl Command for Tools {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/tools",
            "List the tools the model can call, with the extension that provides each.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        let o = session::overview()?;
        if o.tools.is_empty() {
            return Ok(CommandOutput::text(
                "No tools are offered to the model in this session (--no-tools, or no tool extension loaded).",
            ));
        }
        let width = o
            .tools
            .iter()
            .map(|t| t.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = format!("{} tools:\n", o.tools.len());
        for t in &o.tools {
            let first = t.description.lines().next().unwrap_or("");
            out.push_str(&format!("  {:width$}  {first} [{}]\n", t.name, t.extension));
        }
        Ok(CommandOutput::text(out))
    }
}

stud_sdk::export_command!(Tools);
