//! `/sessions`: list the saved sessions of this folder, newest first.
use stud_sdk::host::session;
use stud_sdk::prelude::*;

#[derive(Default)]
struct Sessions;

impl Command for Sessions {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/sessions",
            "List the saved sessions of this folder, newest first.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        let list = session::sessions()?;
        let mut out = String::new();
        if !list.sessions.iter().any(|s| s.id == list.current) {
            // A session is saved from its first message on.
            out.push_str(&format!(
                "{}  (this session) saved once it has a message\n",
                list.current
            ));
        }
        for s in &list.sessions {
            let here = if s.id == list.current {
                "  (this session)"
            } else {
                ""
            };
            let title = if s.title.is_empty() {
                "(untitled)"
            } else {
                s.title.as_str()
            };
            out.push_str(&format!("{}  {title}{here}\n", s.id));
        }
        if list.sessions.is_empty() {
            out.push_str("No other saved sessions in this folder yet.\n");
        } else {
            out.push_str("/resume ID continues one.\n");
        }
        Ok(CommandOutput::text(out))
    }
}

stud_sdk::export_command!(Sessions);
