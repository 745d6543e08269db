//! `/provider`: show the provider in use and the loaded ones, or switch to another for the next turn.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Provider;

impl Command for Provider {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/provider",
            "Show the provider in use and the loaded ones, or switch to another for the next turn.",
        )
        .hint("[PROVIDER]")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        match args.positional.first() {
            Some(id) => Ok(CommandOutput::text(session::act(&Action::SwitchProvider(
                id.clone(),
            ))?)),
            None => {
                let o = session::overview()?;
                let others: Vec<&str> = o
                    .providers
                    .iter()
                    .map(String::as_str)
                    .filter(|p| *p != o.provider)
                    .collect();
                let mut out = format!("provider: {} (model {})\n", o.provider, o.model);
                if !others.is_empty() {
                    out.push_str(&format!(
                        "also loaded: {}; /provider ID switches\n",
                        others.join(", ")
                    ));
                }
                Ok(CommandOutput::text(out))
            }
        }
    }
}

stud_sdk::export_command!(Provider);
