//! Files as an editor has them. When stud runs inside an editor that offers
//! its file system (ACP's `fs/read_text_file` and `fs/write_text_file`),
//! the bundled `read`, `write` and `edit` tools see unsaved buffers and
//! their edits land in the editor, not behind its back on disk.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

/// A request to the editor, answered later.
pub type EditorFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// The editor's side: whole text files by absolute path.
pub trait EditorFiles: Send + Sync {
    fn read(&self, path: PathBuf) -> EditorFuture<String>;
    fn write(&self, path: PathBuf, content: String) -> EditorFuture<()>;
}

/// Where a session's file tools go instead of the disk: the editor, for
/// files under `project` (the only ones the tools may touch).
#[derive(Clone)]
pub struct EditorRoute {
    pub files: Arc<dyn EditorFiles>,
    pub project: PathBuf,
}

impl EditorRoute {
    /// The absolute path of an approval key (a path relative to the
    /// project, already resolved and refused when it leaves it).
    pub fn path_of(&self, key: &str) -> PathBuf {
        if key == "." {
            self.project.clone()
        } else {
            self.project.join(Path::new(key))
        }
    }
}
