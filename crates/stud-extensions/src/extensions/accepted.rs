//! Whether something a trusted project brings, read after the session
//! started, is what the user accepted. At start the trust decision covers
//! the project as it is then (`trust::recorded_scope`); a hot reload or
//! `/reload` reads its `.stud/` again, and a `git pull` may have changed
//! it since (new code, a manifest asking for `exec` or network). Such a
//! project extension is taken only when the project's trust review, read
//! now, is the one whose digest the trust list records as accepted and
//! lists this very extension (id, kind, version, component digest,
//! capabilities). Anything else is refused with what to do: the user's
//! own (bundled, global, `stud ext dev`) extensions are not asked about.
//! A project trusted for one run only ("trust once") has nothing on
//! record, so it never takes a change mid-session.

use std::path::Path;

use super::discovery::{Discovered, ProjectScope};
use super::review::ProjectReview;
use super::scope::Scope;
use super::trust::{Decision, TrustStore, review};

/// Why a project extension read mid-session is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAccepted {
    #[error(
        "this project's trust is not on record (it was trusted for this run only, or is no longer trusted)"
    )]
    NotRecorded,
    #[error("the project's trust review changed since you accepted it")]
    ReviewChanged,
    #[error(
        "it is not what the trust review you accepted lists (it is new, or its component or capabilities changed)"
    )]
    NotListed,
    #[error("the trust list cannot be read ({0})")]
    TrustList(String),
}

impl NotAccepted {
    /// The whole refusal for extension `id`; `kept` says what goes on
    /// instead.
    pub fn refusal(&self, id: &str, kept: &str) -> String {
        format!(
            "`{id}` comes from this project's .stud/ and {self}; run `stud trust grant` to review and accept it, then restart stud (or /reload). {kept}"
        )
    }
}

/// The project's trust review as the user accepted it, read now.
pub struct Accepted(Result<ProjectReview, NotAccepted>);

impl Accepted {
    /// Read the trust list and review the project's `.stud/` as it is now.
    pub fn read(global_root: &Path, project: &ProjectScope) -> Self {
        let ProjectScope::Trusted(dir) = project else {
            return Accepted(Err(NotAccepted::NotRecorded));
        };
        Accepted(match TrustStore::new(global_root).latest(dir) {
            Err(e) => Err(NotAccepted::TrustList(e.to_string())),
            Ok(Some(entry)) if entry.decision == Decision::Trusted => {
                let now = review(global_root, dir);
                if entry.accepted.as_deref() == Some(now.digest().as_str()) {
                    Ok(now)
                } else {
                    Err(NotAccepted::ReviewChanged)
                }
            }
            Ok(_) => Err(NotAccepted::NotRecorded),
        })
    }

    /// Whether `d` may be used: any extension of the user's own scopes,
    /// a project one only as the accepted review lists it.
    pub fn admits(&self, d: &Discovered) -> Result<(), NotAccepted> {
        if d.scope != Scope::Project {
            return Ok(());
        }
        match &self.0 {
            Err(e) => Err(e.clone()),
            Ok(review) if review.lists(d) => Ok(()),
            Ok(_) => Err(NotAccepted::NotListed),
        }
    }
}
