use super::{guest_call, infallible};
use crate::runtime::contract::v0_1::stud::extension::command_types::{
    CommandArgs, CommandOutput, CommandSpec,
};
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn command_describe(&self) -> Result<CommandSpec, CallError> {
        guest_call!(self, Command, "describe", |g, store| infallible(
            g.call_describe(store).await
        ))
    }

    pub async fn command_execute(&self, args: &CommandArgs) -> Result<CommandOutput, CallError> {
        let args = args.clone();
        guest_call!(self, Command, "execute", |g, store| g
            .call_execute(store, &args)
            .await)
    }
}
