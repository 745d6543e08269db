//! `/trust`: show whether this folder's .stud/ (project settings and extensions) is trusted.
use stud_sdk::host::session;
use stud_sdk::prelude::*;

#[derive(Default)]
struct Trust;

impl Command for Trust {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/trust",
            "Show whether this folder's .stud/ (project settings and extensions) is trusted.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        let t = session::trust()?;
        let mut out = format!("{}: {}\n", t.folder, t.state);
        if !t.project_extensions.is_empty() {
            out.push_str(&format!(
                "project extensions: {}\n",
                t.project_extensions.join(", ")
            ));
        }
        out.push_str(&t.hint);
        out.push('\n');
        Ok(CommandOutput::text(out))
    }
}

stud_sdk::export_command!(Trust);
