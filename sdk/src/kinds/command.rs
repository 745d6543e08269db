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

    /// Name (with the leading `/`) and description.
    fn spec(&self) -> CommandSpec;

    /// Run the command; `rendered` in the output is shown to the user.
    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error>;
}
