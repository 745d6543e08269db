//! `/clear`: start a new, empty session; this one stays saved and can be resumed.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Clear;

impl Command for Clear {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/clear",
            "Start a new, empty session; this one stays saved and can be resumed.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        Ok(CommandOutput::text(session::act(&Action::Clear)?))
    }
}

stud_sdk::export_command!(Clear);
