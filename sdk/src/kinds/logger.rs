//! Loggers: write events somewhere.

use serde_json::Value;

use crate::Error;
use crate::wit::stud::extension::types::Event;

pub trait Logger: Default + 'static {
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    fn sink(&mut self, event: Event) -> Result<(), Error>;

    fn flush(&mut self) -> Result<(), Error> {
        Ok(())
    }
}
