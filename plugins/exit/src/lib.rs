//! `/exit`: quit (the session is saved as always).
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Exit;

impl Command for Exit {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new("/exit", "Quit (the session is saved as always).")
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        Ok(CommandOutput::text(session::act(&Action::Exit)?))
    }
}

stud_sdk::export_command!(Exit);
