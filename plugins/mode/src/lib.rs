//! `/mode`: show the security mode that decides which tool calls need your approval.
use stud_sdk::host::session;
use stud_sdk::prelude::*;

#[derive(Default)]
struct Mode;

impl Command for Mode {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/mode",
            "Show the security mode that decides which tool calls need your approval.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        let o = session::overview()?;
        let what = match o.mode.as_str() {
            "ask" => "every call that changes something asks for your approval",
            "allowlist" => "calls matching the allowlist run; others ask",
            "yolo" => "every call runs without asking",
            _ => "",
        };
        Ok(CommandOutput::text(format!(
            "mode: {} ({what}).\nThe mode is fixed for the session; start one with --mode ask|allowlist|yolo to change it.\n",
            o.mode
        )))
    }
}

stud_sdk::export_command!(Mode);
