//! The throwaway copy a `--live-tools` replay runs in: the project as it
//! was before the session's first change. Files are copied as they are
//! now, then what the session's checkpoints say it changed is put back.

use std::path::{Path, PathBuf};

use crate::kernel::checkpoints::{CheckpointError, CheckpointSettings, Checkpoints, Kind};

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("cannot make a folder for the throwaway copy: {0}")]
    Temp(std::io::Error),
    #[error("cannot copy {} for the replay: {source}", .project.display())]
    Copy {
        project: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot put the copy back as it was before the session: {0}")]
    Checkpoint(#[from] CheckpointError),
}

/// A temporary copy of `project`, with what the session changed put back
/// as it was before its first change (from its checkpoints, when kept).
pub fn throwaway_copy(
    home: &Path,
    project: &Path,
    id: &str,
) -> Result<tempfile::TempDir, CopyError> {
    let dir = tempfile::Builder::new()
        .prefix("stud-replay-")
        .tempdir()
        .map_err(CopyError::Temp)?;
    copy_tree(project, dir.path()).map_err(|source| CopyError::Copy {
        project: project.to_path_buf(),
        source,
    })?;
    let checkpoints = Checkpoints::open(home, project, id, &CheckpointSettings::default());
    let first = checkpoints
        .records()
        .iter()
        .find(|r| r.kind == Kind::Turn && !r.changed.is_empty())
        .map(|r| r.turn);
    if let Some(turn) = first {
        let plan = checkpoints.plan_rewind(turn)?;
        checkpoints.restore_into(&plan, dir.path())?;
    }
    Ok(dir)
}

/// Copy the tree at `from` into `to` (symbolic links as links).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            std::fs::create_dir(&dst)?;
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}
