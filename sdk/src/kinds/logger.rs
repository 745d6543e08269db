//! Loggers: write events somewhere.

use serde_json::Value;

use crate::Error;
use crate::wit::stud::extension::types::Event;

/// A logger: receives the kernel's events and writes them somewhere.
pub trait Logger: Default + 'static {
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

    /// Record one event.
    fn sink(&mut self, event: Event) -> Result<(), Error>;

    /// Write out anything buffered (called at turn end and shutdown).
    /// Default: nothing is buffered.
    fn flush(&mut self) -> Result<(), Error> {
        Ok(())
    }
}
