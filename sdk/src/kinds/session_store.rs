//! Session stores: durable logs and manifests of sessions.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::session_store_types::{SessionData, SessionSummary};

/// Records and manifests are JSON text the kernel defines; the store keeps
/// them opaque and durable.
pub trait SessionStore: Default + 'static {
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    fn append(&mut self, session_id: &str, records: Vec<String>) -> Result<(), Error>;
    fn write_manifest(&mut self, session_id: &str, manifest: String) -> Result<(), Error>;
    fn read(&mut self, session_id: &str) -> Result<SessionData, Error>;
    fn list(&mut self) -> Result<Vec<SessionSummary>, Error>;
    fn delete(&mut self, session_id: &str) -> Result<(), Error>;
}
