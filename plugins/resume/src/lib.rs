//! `/resume`: continue a saved session of this folder; without an id, pick one.
use stud_sdk::host::{
    interaction,
    session::{self, Action},
};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Resume;

impl Command for Resume {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/resume",
            "Continue a saved session of this folder; without an id, pick one.",
        )
        .hint("[ID]")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        let id = match args.positional.first() {
            Some(id) => id.clone(),
            None => {
                let list = session::sessions()?;
                let options: Vec<String> = list
                    .sessions
                    .iter()
                    .filter(|s| s.id != list.current)
                    .take(20)
                    .map(|s| {
                        if s.title.is_empty() {
                            s.id.clone()
                        } else {
                            format!("{}  {}", s.id, s.title)
                        }
                    })
                    .collect();
                if options.is_empty() {
                    return Ok(CommandOutput::text(
                        "No other saved session in this folder.",
                    ));
                }
                let refs: Vec<&str> = options.iter().map(String::as_str).collect();
                match interaction::select("Continue which session?", &refs) {
                    Ok(Some(choice)) => choice
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    Ok(None) => return Ok(CommandOutput::text("Nothing chosen.")),
                    Err(_) => {
                        return Ok(CommandOutput::text(format!(
                            "Sessions:\n  {}\n/resume ID continues one.",
                            options.join("\n  ")
                        )));
                    }
                }
            }
        };
        Ok(CommandOutput::text(session::act(&Action::Resume(id))?))
    }
}

stud_sdk::export_command!(Resume);
