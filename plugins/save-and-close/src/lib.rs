//! `/save-and-close`: save the session and quit; it prints how to continue it later.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct SaveAndClose;

impl Command for SaveAndClose {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/save-and-close",
            "Save the session and quit; it prints how to continue it later.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        Ok(CommandOutput::text(session::act(&Action::SaveAndClose)?))
    }
}

stud_sdk::export_command!(SaveAndClose);
