//! Context providers: fragments added to the request at COMPOSE_REQUEST.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::context_provider_types::{
    ComposeContext, Fragment, FragmentKind,
};

/// A context provider. The kernel calls `provide` while composing each
/// request and adds the fragments it returns.
///
/// One that adds only what the person configured (a file they name in
/// its config) declares that key in its manifest, `[context] when-config
/// = "path"`: where the key is empty the kernel never links or calls it,
/// so sessions that do not use it do not pay for it at start.
pub trait ContextProvider: Default + 'static {
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

    /// The fragments to add to the request being composed.
    fn provide(&mut self, ctx: ComposeContext) -> Result<Vec<Fragment>, Error>;
}
