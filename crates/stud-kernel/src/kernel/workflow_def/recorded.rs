//! The state machine a resumed session ran, as its manifest records it.

use stud_protocol::session_manifest::RecordedMachine;

use super::WorkflowError;
use crate::extensions::Scope;
use crate::runtime::Extension;

/// The state machine a session's manifest says it ran. Manifests written
/// before the scope was recorded name only the id and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub id: String,
    /// `bundled`, `global` or `project`, as written.
    pub scope: Option<String>,
    pub sha256: Option<String>,
}

impl From<RecordedMachine> for Recorded {
    fn from(m: RecordedMachine) -> Self {
        Recorded {
            id: m.id,
            scope: m.scope,
            sha256: m.sha256,
        }
    }
}

impl Recorded {
    /// Whether `sm`, loaded under the recorded id, is the machine the
    /// session ran: one of the user's own (bundled or global), of the
    /// recorded scope, with the recorded digest.
    pub(crate) fn is(&self, sm: &Extension) -> Result<(), WorkflowError> {
        let id = &self.id;
        let refused = |what: String| WorkflowError::ResumeMismatch {
            detail: format!(
                "it ran state machine `{id}`{}, {what}. Resume with `--sm {id}` to run the one loaded now knowingly, or start a new session",
                self.scope
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            ),
        };
        if sm.scope > Scope::Global {
            return Err(refused(format!(
                "and the `{id}` loaded now is a {} extension (a trusted project brought its own); a resume attaches only a bundled or global state machine by itself, since its stages approve tools",
                sm.scope
            )));
        }
        if let Some(scope) = self.scope.as_deref().filter(|s| *s != sm.scope.as_str()) {
            return Err(refused(format!(
                "and the `{id}` loaded now is a {} extension, not the {scope} one",
                sm.scope
            )));
        }
        let now = sm.digest.to_string();
        if let Some(then) = self.sha256.as_deref().filter(|d| *d != now) {
            return Err(refused(format!(
                "and the `{id}` loaded now is other code: it changed since ({then} -> {now})"
            )));
        }
        Ok(())
    }
}
