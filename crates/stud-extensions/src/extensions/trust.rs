//! Project trust. A folder with `.stud/` may carry settings and extensions
//! that would run on open; nothing in it is read until the user decides.
//! Decisions live in the global scope (`~/.stud/trust.json`), never inside
//! a project, keyed by the real path of the project's `.stud` folder;
//! the newest decision for a path wins.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::discovery::{Discovery, ProjectScope};
use super::review::ProjectReview;
use crate::paths::StudHome;

const TRUST_FILE: &str = "trust.json";
const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read the trust list {path}: {message}; fix or delete it")]
    Read { path: PathBuf, message: String },
    #[error("cannot write the trust list {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} has no .stud folder; there is nothing to trust")]
    NoProject { path: PathBuf },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Trusted,
    Declined,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustEntry {
    pub canonical_path: String,
    pub decision: Decision,
    /// Unix seconds.
    pub granted_at: u64,
    pub schema_version: u32,
    /// The digest of the project's security review the user accepted with
    /// this decision (`extensions::review`); none for older entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    entries: Vec<TrustEntry>,
}

/// The project's `.stud` folder (real path), if `cwd` has one. Exactly
/// `<cwd>/.stud`: no walking up.
pub fn project_stud_dir(cwd: &Path) -> Option<PathBuf> {
    let dir = cwd.join(".stud");
    dir.is_dir().then(|| dir.canonicalize().unwrap_or(dir))
}

pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The list in the global scope root.
    pub fn new(global_root: &Path) -> Self {
        TrustStore {
            path: global_root.join(TRUST_FILE),
        }
    }

    fn read(&self) -> Result<TrustFile, TrustError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| TrustError::Read {
                path: self.path.clone(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(e) => Err(TrustError::Read {
                path: self.path.clone(),
                message: e.to_string(),
            }),
        }
    }

    /// The newest decision for a project's `.stud` folder.
    pub fn decision(&self, stud_dir: &Path) -> Result<Option<Decision>, TrustError> {
        Ok(self.latest(stud_dir)?.map(|e| e.decision))
    }

    /// The newest entry for a project's `.stud` folder.
    pub fn latest(&self, stud_dir: &Path) -> Result<Option<TrustEntry>, TrustError> {
        let key = stud_dir.display().to_string();
        Ok(self
            .read()?
            .entries
            .into_iter()
            .rev()
            .find(|e| e.canonical_path == key))
    }

    /// Append a decision (atomic rewrite of the file); `accepted` is the
    /// digest of the security review the user saw and accepted.
    pub fn record(
        &self,
        stud_dir: &Path,
        decision: Decision,
        accepted: Option<String>,
    ) -> Result<(), TrustError> {
        let mut file = self.read()?;
        file.entries.push(TrustEntry {
            canonical_path: stud_dir.display().to_string(),
            decision,
            granted_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            schema_version: SCHEMA_VERSION,
            accepted,
        });
        let write = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(&file).map_err(|e| write(std::io::Error::other(e)))?;
        crate::atomic_write::write_atomic(&self.path, text.as_bytes()).map_err(write)
    }

    /// The current decision per project, sorted by path.
    pub fn list(&self) -> Result<Vec<TrustEntry>, TrustError> {
        let mut latest: std::collections::BTreeMap<String, TrustEntry> = Default::default();
        for e in self.read()?.entries {
            latest.insert(e.canonical_path.clone(), e);
        }
        Ok(latest.into_values().collect())
    }
}

/// The security review of a project's `.stud` folder against the user's
/// settings and the bundled and global extensions.
pub fn review(global_root: &Path, stud_dir: &Path) -> ProjectReview {
    let home = StudHome::at(global_root);
    let lower = Discovery::scan(&home, &ProjectScope::None).found;
    ProjectReview::of(stud_dir, &home.settings_file(), &lower)
}

/// The project scope by the recorded decisions alone (no prompt): trusted
/// when the newest decision for this folder says so, and `Changed` when
/// what it may do is not what the user accepted then.
pub fn recorded_scope(global_root: &Path, cwd: &Path) -> ProjectScope {
    let Some(dir) = project_stud_dir(cwd) else {
        return ProjectScope::None;
    };
    match TrustStore::new(global_root).latest(&dir) {
        Ok(Some(e)) if e.decision == Decision::Trusted => {
            let review = review(global_root, &dir);
            if !review.needs_acceptance() || e.accepted.as_deref() == Some(&review.digest()) {
                ProjectScope::Trusted(dir)
            } else {
                ProjectScope::Changed(dir)
            }
        }
        _ => ProjectScope::Untrusted(dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_decision_wins() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        assert_eq!(project_stud_dir(project.path()), None);
        std::fs::create_dir(project.path().join(".stud")).unwrap();
        let dir = project_stud_dir(project.path()).unwrap();
        let store = TrustStore::new(home.path());
        assert_eq!(store.decision(&dir).unwrap(), None);
        store.record(&dir, Decision::Trusted, None).unwrap();
        assert_eq!(store.decision(&dir).unwrap(), Some(Decision::Trusted));
        store.record(&dir, Decision::Declined, None).unwrap();
        assert_eq!(store.decision(&dir).unwrap(), Some(Decision::Declined));
        assert_eq!(store.list().unwrap().len(), 1);
    }
}
