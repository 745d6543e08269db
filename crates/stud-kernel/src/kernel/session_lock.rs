//! One process per session. Two `stud -c` on the same session at once
//! would interleave records in its log; the second one is refused while
//! the first holds the session's lock (an advisory `flock` on
//! `<stud home>/locks/<session id>.lock`, released by the kernel when the
//! process ends, however it ends).

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SessionLockError {
    #[error(
        "session {id} is open in another stud process{holder}; wait for it to finish, or start a new session (without -c/--resume)"
    )]
    Busy { id: String, holder: String },
    #[error("cannot lock session {id} ({path}): {source}")]
    Io {
        id: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Held for as long as the session runs in this process.
#[derive(Debug)]
pub struct SessionLock {
    _file: std::fs::File,
}

impl SessionLock {
    pub fn acquire(home: &Path, id: &str) -> Result<Self, SessionLockError> {
        let dir = home.join("locks");
        let path = dir.join(format!("{id}.lock"));
        let io = |source| SessionLockError::Io {
            id: id.to_string(),
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let busy = match file.try_lock() {
            Ok(()) => false,
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        };
        if busy {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .map(|pid| pid.trim().to_string())
                .filter(|pid| !pid.is_empty())
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default();
            return Err(SessionLockError::Busy {
                id: id.to_string(),
                holder,
            });
        }
        let _ = std::fs::write(&path, std::process::id().to_string());
        Ok(SessionLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let home = tempfile::tempdir().unwrap();
        let first = SessionLock::acquire(home.path(), "s1").unwrap();
        let err = SessionLock::acquire(home.path(), "s1").unwrap_err();
        assert!(err.to_string().contains("another stud process"), "{err}");
        assert!(SessionLock::acquire(home.path(), "s2").is_ok());
        drop(first);
        assert!(SessionLock::acquire(home.path(), "s1").is_ok());
    }
}
