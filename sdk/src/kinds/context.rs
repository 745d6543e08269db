//! Context providers: fragments added to the request at COMPOSE_REQUEST.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::context_provider_types::{
    ComposeContext, Fragment, FragmentKind,
};

pub trait ContextProvider: Default + 'static {
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    fn provide(&mut self, ctx: ComposeContext) -> Result<Vec<Fragment>, Error>;
}
