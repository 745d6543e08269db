//! Commands: `/name args` run outside any turn.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::command_types::{CommandArgs, CommandOutput, CommandSpec};

pub trait Command: Default + 'static {
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// Name (with the leading `/`) and description.
    fn spec(&self) -> CommandSpec;

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error>;
}
