//! `/model`: show the model in use and those the provider offers, or switch to another one for the next turn.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Model;

impl Command for Model {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new("/model", "Show the model in use and those the provider offers, or switch to another one for the next turn.").hint("[MODEL]")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        match args.positional.first() {
            Some(model) => Ok(CommandOutput::text(session::act(&Action::SwitchModel(
                model.clone(),
            ))?)),
            None => {
                let o = session::overview()?;
                let others: Vec<&str> = o
                    .models
                    .iter()
                    .map(String::as_str)
                    .filter(|m| *m != o.model)
                    .collect();
                let mut out = format!("model: {} (provider {})\n", o.model, o.provider);
                if !others.is_empty() {
                    out.push_str(&format!(
                        "also offered: {}; /model ID switches\n",
                        others.join(", ")
                    ));
                }
                Ok(CommandOutput::text(out))
            }
        }
    }
}

stud_sdk::export_command!(Model);
