//! `/reload`: look for changed extensions now and swap them in at the next stage boundary.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Reload;

impl Command for Reload {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/reload",
            "Look for changed extensions now and swap them in at the next stage boundary.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        Ok(CommandOutput::text(session::act(&Action::Reload)?))
    }
}

stud_sdk::export_command!(Reload);
