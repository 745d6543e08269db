//! `/sm`: show the attached state machine (workflow) and those loaded, or attach one: the next input runs its stages.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Sm;

impl Command for Sm {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new("/sm", "Show the attached state machine (workflow) and those loaded, or attach one: the next input runs its stages.").hint("[STATE-MACHINE]")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        let wanted = match args.positional.as_slice() {
            [] => None,
            [id] => Some(id.clone()),
            [verb, id] if verb == "attach" => Some(id.clone()),
            _ => return Err(Error::invalid_input("usage: /sm [STATE-MACHINE]")),
        };
        if let Some(id) = wanted {
            return Ok(CommandOutput::text(session::act(
                &Action::AttachStateMachine(id),
            )?));
        }
        let o = session::overview()?;
        let mut out = match &o.state_machine {
            Some(id) => format!("workflow: {id} (each input runs its stages)\n"),
            None => "workflow: none attached\n".to_string(),
        };
        if o.state_machines.is_empty() {
            out.push_str("No state machine is loaded.\n");
        } else {
            out.push_str(&format!(
                "loaded: {}; /sm ID attaches one\n",
                o.state_machines.join(", ")
            ));
        }
        Ok(CommandOutput::text(out))
    }
}

stud_sdk::export_command!(Sm);
