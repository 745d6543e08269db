//! Session stores: durable logs and manifests of sessions.

use serde_json::Value;

use crate::Error;
pub use crate::wit::stud::extension::session_store_types::{SessionData, SessionSummary};

/// Records and manifests are JSON text the kernel defines; the store keeps
/// them opaque and durable.
pub trait SessionStore: Default + 'static {
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

    /// Durably append records to a session's log; return only once stored.
    /// An empty `records` claims the session for writing and stores
    /// nothing: a store shared by several machines refuses one another
    /// process writes (code `session-busy`); the kernel claims a session
    /// it resumes this way before anything else.
    fn append(&mut self, session_id: &str, records: Vec<String>) -> Result<(), Error>;
    /// Atomically replace the session's manifest snapshot.
    fn write_manifest(&mut self, session_id: &str, manifest: String) -> Result<(), Error>;
    /// The manifest and every record, so the session can be resumed.
    fn read(&mut self, session_id: &str) -> Result<SessionData, Error>;
    /// Summaries of every stored session, for listings.
    fn list(&mut self) -> Result<Vec<SessionSummary>, Error>;
    /// Remove a session for good.
    fn delete(&mut self, session_id: &str) -> Result<(), Error>;
}
