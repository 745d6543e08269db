//! Many files at once (contract 0.1.2), for tools granted a folder.
//!
//! Reading a project file by file through `std::fs` costs several host
//! calls per file, one after another. [`walk`] asks the host to walk a
//! folder instead: it reads the files on threads of its own while the tool
//! works on the ones already handed over, and honours `.gitignore`,
//! `.ignore` and hidden-file rules as ripgrep does. The host opens every
//! file beneath the granted folder: a symlink leading out of it, a FIFO or
//! a device is never read.
//!
//! ```no_run
//! # fn demo() -> Result<(), stud_sdk::Error> {
//! use stud_sdk::files::{self, Content};
//! for file in files::walk("/project/src", &files::WalkOptions::default())? {
//!     if let Content::Bytes(bytes) = file.content {
//!         let _ = (file.path, bytes.len());
//!     }
//! }
//! # Ok(()) }
//! ```

use crate::Error;
use crate::wit::stud::extension::files as host;

pub use host::{Content, File, WalkOptions};

/// The largest file the host hands over with its bytes.
pub use stud_protocol::MAX_FILE_BYTES;

impl Default for WalkOptions {
    /// Ignore files and hidden-file rules on, every file, up to
    /// [`MAX_FILE_BYTES`] each.
    fn default() -> Self {
        WalkOptions {
            standard_filters: true,
            globs: Vec::new(),
            max_file_bytes: MAX_FILE_BYTES,
        }
    }
}

/// The files under `root` (a guest path such as `/project/src`, or one
/// file), in walk order: sorted by name within each folder.
///
/// Errors name the root when it is outside the granted folders, missing,
/// or a glob in `options` does not parse.
pub fn walk(root: &str, options: &WalkOptions) -> Result<Walk, Error> {
    let inner = host::walk_files(root, options)?;
    Ok(Walk {
        inner,
        batch: Vec::new().into_iter(),
    })
}

/// An iterator over a walk's files; dropping it stops the host's walk.
pub struct Walk {
    inner: host::Walk,
    batch: std::vec::IntoIter<File>,
}

impl Iterator for Walk {
    type Item = File;

    fn next(&mut self) -> Option<File> {
        loop {
            if let Some(file) = self.batch.next() {
                return Some(file);
            }
            self.batch = self.inner.next_batch()?.into_iter();
        }
    }
}
