//! A compile-cache entry read by mapping it, not copying it: its bytes are
//! checked (MAC) and deserialized straight from the page cache, which
//! spares a copy of every megabyte of code a start runs and the page
//! faults of the buffer it would be copied into (docs/benchmarks.md).
//!
//! Mapped bytes stay what was checked only while no one else can write
//! the file: one that is not ours, or that others may write, is refused
//! (the caller then compiles, as for any entry that does not verify).

use std::fs::File;
use std::path::Path;

/// A file's bytes, mapped read-only (or read, where mapping is not
/// available).
pub struct MappedFile {
    inner: Inner,
}

enum Inner {
    #[cfg(unix)]
    Map {
        ptr: std::ptr::NonNull<libc::c_void>,
        len: usize,
    },
    Read(Vec<u8>),
}

// SAFETY: the mapping is private, read-only and unmapped only on drop; it
// is plain memory any thread may read.
unsafe impl Send for MappedFile {}
// SAFETY: as above; nothing mutates it.
unsafe impl Sync for MappedFile {}

impl MappedFile {
    /// Map `path`; `None` when it cannot be opened, is empty, or may be
    /// written by someone other than its owner, this user.
    pub fn open(path: &Path) -> Option<MappedFile> {
        let file = File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if !only_mine(&meta) {
            return None;
        }
        let len = usize::try_from(meta.len()).ok()?;
        if len == 0 {
            return None;
        }
        Some(MappedFile {
            inner: map(&file, len).unwrap_or_else(|| {
                let mut bytes = Vec::with_capacity(len);
                let _ = std::io::Read::read_to_end(&mut &file, &mut bytes);
                Inner::Read(bytes)
            }),
        })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.inner {
            #[cfg(unix)]
            // SAFETY: `ptr` maps `len` readable bytes until `drop`.
            Inner::Map { ptr, len } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr().cast::<u8>(), *len)
            },
            Inner::Read(bytes) => bytes,
        }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Inner::Map { ptr, len } = self.inner {
            // SAFETY: mapped by `map` with this length, unmapped once.
            unsafe {
                libc::munmap(ptr.as_ptr(), len);
            }
        }
    }
}

#[cfg(unix)]
fn map(file: &File, len: usize) -> Option<Inner> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a fresh private read-only mapping of an open file; the
    // kernel picks the address.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return None;
    }
    std::ptr::NonNull::new(ptr).map(|ptr| Inner::Map { ptr, len })
}

#[cfg(not(unix))]
fn map(_file: &File, _len: usize) -> Option<Inner> {
    None
}

/// Owned by this user and writable by no one else: no one else can change
/// the bytes under the mapping after they were checked.
#[cfg(unix)]
fn only_mine(meta: &std::fs::Metadata) -> bool {
    mine_without(meta, 0o022)
}

#[cfg(not(unix))]
fn only_mine(meta: &std::fs::Metadata) -> bool {
    meta.is_file()
}

/// A regular file owned by this user whose mode has none of the `others`
/// bits (0o022: no one else may write it; 0o077: nor read it).
#[cfg(unix)]
pub(crate) fn mine_without(meta: &std::fs::Metadata, others: u32) -> bool {
    meta.is_file() && super::ownership::owned_by_me_without(meta, others)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_the_bytes_of_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        std::fs::write(&path, b"code").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let mapped = MappedFile::open(&path).unwrap();
        assert_eq!(mapped.bytes(), b"code");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_file_others_may_write() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        std::fs::write(&path, b"code").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(MappedFile::open(&path).is_none());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert!(MappedFile::open(&path).is_none());
    }
}
