//! Development extensions (`stud ext dev DIR`): folders linked into the
//! global scope as they are, never copied or recorded in a lockfile, so
//! each `stud ext build` there is picked up by running sessions (the
//! folder is watched; a reload reads and pins the new build) and by the
//! next start. Each session pins the bytes it starts with; a folder that
//! takes a bundled id is refused. The links live in `~/.stud/dev.toml`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const DEV_FILE: &str = "dev.toml";

#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a valid dev-link file: {message}; fix or delete it", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error("no development extension is linked from {0}; `stud ext list` shows them")]
    NotLinked(String),
}

/// The linked folders, in the order they were linked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevLinks {
    #[serde(default)]
    pub folders: Vec<PathBuf>,
}

impl DevLinks {
    pub fn load(home: &Path) -> Result<Self, DevError> {
        let path = home.join(DEV_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|e| DevError::Parse {
                path,
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DevLinks::default()),
            Err(source) => Err(DevError::Io {
                what: "read",
                path,
                source,
            }),
        }
    }

    fn save(&self, home: &Path) -> Result<(), DevError> {
        let path = home.join(DEV_FILE);
        let text = toml::to_string(self).map_err(|e| DevError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::create_dir_all(home)
            .and_then(|()| crate::atomic_write::write_atomic(&path, text.as_bytes()))
            .map_err(|source| DevError::Io {
                what: "write",
                path,
                source,
            })
    }

    /// Link `dir` (made absolute); linking it again changes nothing.
    pub fn link(home: &Path, dir: &Path) -> Result<PathBuf, DevError> {
        let dir = dir.canonicalize().map_err(|source| DevError::Io {
            what: "find",
            path: dir.to_path_buf(),
            source,
        })?;
        let mut links = DevLinks::load(home)?;
        if !links.folders.contains(&dir) {
            links.folders.push(dir.clone());
            links.save(home)?;
        }
        Ok(dir)
    }

    /// Unlink the folder `what` names (a path, or the id its manifest
    /// has). The folder itself is left alone.
    pub fn unlink(
        home: &Path,
        what: &str,
        id_of: impl Fn(&Path) -> Option<String>,
    ) -> Result<PathBuf, DevError> {
        let mut links = DevLinks::load(home)?;
        let as_path = Path::new(what).canonicalize().ok();
        let pos = links
            .folders
            .iter()
            .position(|f| Some(f) == as_path.as_ref() || id_of(f).as_deref() == Some(what))
            .ok_or_else(|| DevError::NotLinked(what.to_string()))?;
        let dir = links.folders.remove(pos);
        links.save(home)?;
        Ok(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_kept_once_and_removed_by_path_or_id() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        DevLinks::link(home.path(), dir.path()).unwrap();
        DevLinks::link(home.path(), dir.path()).unwrap();
        assert_eq!(DevLinks::load(home.path()).unwrap().folders.len(), 1);
        let e = DevLinks::unlink(home.path(), "nope", |_| None).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        DevLinks::unlink(home.path(), "shout", |_| Some("shout".into())).unwrap();
        assert!(DevLinks::load(home.path()).unwrap().folders.is_empty());
    }
}
