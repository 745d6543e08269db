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
    #[error("cannot read the checkpoint settings: {0}")]
    Settings(String),
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
    // Opened as the session had them: a snapshot of the tree now that left
    // out what the session kept (`includeIgnored`) would misread it.
    let settings = CheckpointSettings::of_person(home, project).map_err(CopyError::Settings)?;
    let checkpoints = Checkpoints::open(home, project, id, &settings);
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

/// Copy the tree at `from` into `to`: the files a checkpoint covers
/// (`.gitignore`d files such as build output are left out, as `.git`
/// itself), symbolic links as links. In a git repository the copy gets a
/// repository of its own: a local clone (objects hard-linked, the
/// project's repository untouched) whose index is its HEAD.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.join(".git").exists() {
        clone_git(from, to);
    }
    let walk = ignore::WalkBuilder::new(from)
        .require_git(false)
        .follow_links(false)
        .hidden(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk {
        let entry = entry.map_err(std::io::Error::other)?;
        let Ok(rel) = entry.path().strip_prefix(from) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let dst = to.join(rel);
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            // A link out of the project would let a tool in the copy
            // write to the real files: only links that stay inside come.
            let target = std::fs::read_link(entry.path())?;
            if stays_inside(rel, &target) {
                #[cfg(unix)]
                std::os::unix::fs::symlink(&target, &dst)?;
            }
        } else if kind.is_dir() {
            std::fs::create_dir_all(&dst)?;
        } else if kind.is_file() {
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(entry.path(), &dst)?;
        }
    }
    if to.join(".git").exists() {
        git(to, &["reset", "--quiet"]);
    }
    Ok(())
}

/// Whether a link at `link` (relative to the project root) to `target`
/// resolves inside the project, by its path alone: an absolute target, or
/// one whose `..` climb above the root, does not.
fn stays_inside(link: &Path, target: &Path) -> bool {
    use std::path::Component;
    if target.is_absolute() {
        return false;
    }
    let mut depth: i64 = link.components().count() as i64 - 1;
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// `git clone --local --no-checkout` of `from` into the empty `to`. A
/// failure (no git, no commit yet) leaves the copy without a repository.
fn clone_git(from: &Path, to: &Path) {
    let ok = std::process::Command::new("git")
        .args(["clone", "--quiet", "--local", "--no-checkout", "--"])
        .arg(from)
        .arg(to)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = std::fs::remove_dir_all(to.join(".git"));
    }
}

fn git(dir: &Path, args: &[&str]) {
    let _ = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_leaves_out_ignored_files_and_gets_its_own_repository() {
        let project = tempfile::tempdir().unwrap();
        let p = project.path();
        let run = |args: &[&str]| {
            std::process::Command::new("git")
                .arg("-C")
                .arg(p)
                .args(args)
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(p.join("target")).unwrap();
        std::fs::write(p.join("target/big.bin"), "build output").unwrap();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::write(p.join("src/lib.rs"), "fn main() {}\n").unwrap();
        let git = run(&["init", "-q"])
            && run(&["-c", "user.email=t@t", "-c", "user.name=t", "add", "."])
            && run(&[
                "-c",
                "user.email=t@t",
                "-c",
                "user.name=t",
                "commit",
                "-qm",
                "one",
            ]);
        std::fs::write(p.join("src/lib.rs"), "fn main() { changed() }\n").unwrap();
        std::os::unix::fs::symlink("lib.rs", p.join("src/inside")).unwrap();
        std::os::unix::fs::symlink(p.join("src/lib.rs"), p.join("src/abs")).unwrap();
        std::os::unix::fs::symlink("../../elsewhere", p.join("src/up")).unwrap();
        let copy = tempfile::tempdir().unwrap();
        copy_tree(p, copy.path()).unwrap();
        let c = copy.path();
        assert_eq!(
            std::fs::read_to_string(c.join("src/lib.rs")).unwrap(),
            "fn main() { changed() }\n"
        );
        assert!(c.join(".gitignore").exists());
        assert!(
            !c.join("target").exists(),
            "ignored build output was copied"
        );
        // Links that leave the project are not copied (a write through
        // one would reach the real files); one inside is.
        assert!(c.join("src/inside").is_symlink());
        assert!(!c.join("src/abs").is_symlink());
        assert!(!c.join("src/up").is_symlink());
        if git {
            let status = std::process::Command::new("git")
                .arg("-C")
                .arg(c)
                .args(["status", "--porcelain", "--untracked-files=no"])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&status.stdout), " M src/lib.rs\n");
            // The project's own repository was not touched.
            assert!(run(&["diff", "--quiet", "HEAD", "--", ".gitignore"]));
        }
    }
}
