//! Commands: `/name args` run outside any turn.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::command_types::{CommandArgs, CommandOutput, CommandSpec};

/// A command. The kernel routes `/name args` to `execute` by the name in
/// `spec`.
pub trait Command: Default + 'static {
    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// The extension is being retired: a reload replaced it, or the
    /// session ended. Release what `init` took; `dispose` follows. Bounded
    /// by the call deadline; an error is logged, not shown.
    fn deactivate(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The last call before the instance is dropped (after `deactivate`).
    fn dispose(&mut self) {}

    /// Name (with the leading `/`) and description.
    fn spec(&self) -> CommandSpec;

    /// Run the command; `rendered` in the output is shown to the user.
    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error>;
}

impl CommandSpec {
    /// A spec with a name (with its `/`) and a description.
    pub fn new(name: &str, description: &str) -> Self {
        CommandSpec {
            name: name.to_string(),
            description: description.to_string(),
            argument_hint: None,
        }
    }

    /// What `/help` shows after the name (`ID`, `[show|allow|deny]`).
    pub fn hint(mut self, hint: &str) -> Self {
        self.argument_hint = Some(hint.to_string());
        self
    }
}

impl CommandOutput {
    /// Text for the person.
    pub fn text(rendered: impl Into<String>) -> Self {
        CommandOutput {
            rendered: rendered.into(),
            payload: None,
        }
    }

    /// Text for the person and the same facts as JSON for programs.
    pub fn with_payload(rendered: impl Into<String>, payload: &Value) -> Self {
        CommandOutput {
            rendered: rendered.into(),
            payload: Some(payload.to_string()),
        }
    }
}
