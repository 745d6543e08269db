//! Contents stored once each, named by their sha256, written through a
//! temporary file and a rename (a crash never leaves a half object under
//! its name).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub struct Objects {
    root: PathBuf,
}

impl Objects {
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Objects { root: root.into() }
    }

    fn path(&self, digest: &str) -> PathBuf {
        let (a, b) = digest.split_at(digest.len().min(2));
        self.root.join(a).join(b)
    }

    pub fn has(&self, digest: &str) -> bool {
        self.path(digest).is_file()
    }

    /// Keep `bytes`; their digest.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let digest = hex::encode(Sha256::digest(bytes));
        let path = self.path(&digest);
        if path.is_file() {
            return Ok(digest);
        }
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        // Not synced: an object lost to a crash is found damaged or
        // missing when read (its digest is checked), never taken for
        // another; the project's own files are synced when restored.
        tmp.write_all(bytes)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(digest)
    }

    pub fn get(&self, digest: &str) -> std::io::Result<Vec<u8>> {
        let bytes = std::fs::read(self.path(digest))?;
        // A damaged object is an error, not a wrong file restored.
        if hex::encode(Sha256::digest(&bytes)) != digest {
            return Err(std::io::Error::other(format!(
                "checkpoint object {digest} is damaged"
            )));
        }
        Ok(bytes)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_kept_once_and_checked_when_read() {
        let dir = tempfile::tempdir().expect("tmp");
        let o = Objects::at(dir.path());
        let a = o.put(b"hello").expect("put");
        assert_eq!(o.put(b"hello").expect("put"), a);
        assert_eq!(o.get(&a).expect("get"), b"hello");
        std::fs::write(o.path(&a), b"tampered").expect("write");
        assert!(o.get(&a).is_err());
    }
}
