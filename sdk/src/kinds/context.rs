//! Context providers: fragments added to the request at COMPOSE_REQUEST.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::context_provider_types::{
    ComposeContext, Fragment, FragmentKind,
};

/// A context provider. The kernel calls `provide` while composing each
/// request and adds the fragments it returns.
pub trait ContextProvider: Default + 'static {
    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// The fragments to add to the request being composed.
    fn provide(&mut self, ctx: ComposeContext) -> Result<Vec<Fragment>, Error>;
}
