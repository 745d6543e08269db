//! `/compact`: summarise older messages now, so the next request is shorter.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Compact;

impl Command for Compact {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/compact",
            "Summarise older messages now, so the next request is shorter.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        Ok(CommandOutput::text(session::act(&Action::Compact)?))
    }
}

stud_sdk::export_command!(Compact);
