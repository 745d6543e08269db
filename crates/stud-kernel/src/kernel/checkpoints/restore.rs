//! Putting a snapshot back: what differs from the tree now (contents,
//! modes, files made since, files gone since), then each file written
//! through a temporary file beside it and a rename, so a crash at any
//! point leaves every file either as it was or as restored.

use std::io::Write as _;
use std::path::{Component, Path};

use super::capture::Snapshot;
use super::objects::Objects;

/// What a restore's temporary files are called: a snapshot never keeps
/// one (a crash mid-restore can leave one behind).
pub const TEMP_PREFIX: &str = ".stud-restore-";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Put this content and mode back (changed or removed since).
    Write {
        path: String,
        digest: String,
        mode: u32,
    },
    /// Remove a file made since.
    Remove { path: String },
    /// It changed, but its old content was not kept (too large).
    Unkept { path: String },
}

/// What restoring `then` over the tree as it is `now` changes.
pub fn plan(then: &Snapshot, now: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    for (path, old) in &then.files {
        let same = now.files.get(path).is_some_and(|cur| {
            cur.digest.is_some() && cur.digest == old.digest && cur.mode == old.mode
        });
        if same {
            continue;
        }
        match &old.digest {
            Some(d) => out.push(Change::Write {
                path: path.clone(),
                digest: d.clone(),
                mode: old.mode,
            }),
            None => out.push(Change::Unkept { path: path.clone() }),
        }
    }
    for path in now.files.keys() {
        if !then.files.contains_key(path) {
            out.push(Change::Remove { path: path.clone() });
        }
    }
    out
}

/// Carry out `changes` under `root`. Every path is checked before any
/// file is written, so a refused one leaves the rest untouched.
pub fn restore(root: &Path, objects: &Objects, changes: &[Change]) -> std::io::Result<()> {
    for change in changes {
        if let Change::Write { path, .. } | Change::Remove { path } = change {
            inside(root, path)?;
        }
    }
    for change in changes {
        match change {
            Change::Write { path, digest, mode } => {
                let target = inside(root, path)?;
                let bytes = objects.get(digest)?;
                let dir = target.parent().unwrap_or(root);
                std::fs::create_dir_all(dir)?;
                let mut tmp = tempfile::Builder::new()
                    .prefix(TEMP_PREFIX)
                    .tempfile_in(dir)?;
                tmp.write_all(&bytes)?;
                set_mode(tmp.as_file(), *mode)?;
                tmp.as_file().sync_all()?;
                tmp.persist(&target).map_err(|e| e.error)?;
            }
            Change::Remove { path } => {
                let target = inside(root, path)?;
                match std::fs::remove_file(&target) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            Change::Unkept { .. } => {}
        }
    }
    Ok(())
}

/// `root/path`, refusing a path that would leave it: one that names a
/// parent (a snapshot is data read back from disk: it is checked like
/// any), or whose folders on the way are not real folders now (a link
/// the turn put in place of a folder would take the write, or the
/// removal, outside the project).
fn inside(root: &Path, path: &str) -> std::io::Result<std::path::PathBuf> {
    let leaves = || {
        std::io::Error::other(format!(
            "checkpoint path `{path}` leaves the project; not restored"
        ))
    };
    let rel = Path::new(path);
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(leaves());
    }
    let mut dir = root.to_path_buf();
    for folder in rel.parent().into_iter().flat_map(Path::components) {
        dir.push(folder);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            // Missing: made as a real folder when written.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            _ => {
                return Err(std::io::Error::other(format!(
                    "checkpoint path `{path}`: `{}` is no longer a folder of the project (a link or a file took its place); not restored",
                    dir.strip_prefix(root).unwrap_or(&dir).display()
                )));
            }
        }
    }
    Ok(root.join(rel))
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::capture::{Limits, take};
    use super::*;

    #[test]
    fn a_turns_changes_are_undone_to_the_byte_and_the_mode() {
        let project = tempfile::tempdir().expect("p");
        let store = tempfile::tempdir().expect("s");
        let objects = Objects::at(store.path());
        let p = project.path();
        std::fs::write(p.join("edited.txt"), "before\n").expect("w");
        std::fs::write(p.join("removed.txt"), "keep me").expect("w");
        std::fs::write(p.join("renamed.txt"), "moving").expect("w");
        std::fs::write(p.join("script.sh"), "echo hi").expect("w");
        let then = take(p, &objects, None, Limits::default()).expect("take");
        // The turn: sed -i, rm, a new file, a rename, chmod +x.
        std::fs::write(p.join("edited.txt"), "after\n").expect("w");
        std::fs::remove_file(p.join("removed.txt")).expect("rm");
        std::fs::write(p.join("new.txt"), "new").expect("w");
        std::fs::rename(p.join("renamed.txt"), p.join("moved.txt")).expect("mv");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(p.join("script.sh"), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let now = take(p, &objects, Some(&then), Limits::default()).expect("take");
        let changes = plan(&then, &now);
        restore(p, &objects, &changes).expect("restore");
        let after = take(p, &objects, None, Limits::default()).expect("take");
        let digests = |s: &Snapshot| {
            s.files
                .iter()
                .map(|(k, e)| (k.clone(), e.digest.clone(), e.mode))
                .collect::<Vec<_>>()
        };
        assert_eq!(digests(&after), digests(&then));
        assert!(plan(&then, &after).is_empty());
    }

    #[test]
    fn a_snapshot_cannot_write_outside_the_project() {
        let project = tempfile::tempdir().expect("p");
        let store = tempfile::tempdir().expect("s");
        let objects = Objects::at(store.path());
        let digest = objects.put(b"owned").expect("put");
        let evil = [Change::Write {
            path: "../escaped.txt".into(),
            digest,
            mode: 0o644,
        }];
        assert!(restore(project.path(), &objects, &evil).is_err());
        assert!(!project.path().join("../escaped.txt").exists());
    }
}

#[cfg(all(test, unix))]
mod symlink_tests {
    use super::super::capture::{Limits, take};
    use super::*;

    /// The attack: between the snapshot and the undo, the turn replaces a
    /// project folder with a link to a folder outside. Putting back
    /// `sub/a.txt` must not write through the link, nor remove what is on
    /// its other side, and nothing may be half restored.
    #[test]
    fn a_folder_swapped_for_a_link_is_not_written_through() {
        let project = tempfile::tempdir().expect("p");
        let outside = tempfile::tempdir().expect("o");
        let store = tempfile::tempdir().expect("s");
        let objects = Objects::at(store.path());
        let p = project.path();
        std::fs::create_dir_all(p.join("sub")).expect("mkdir");
        std::fs::write(p.join("sub/a.txt"), "mine").expect("w");
        std::fs::write(p.join("top.txt"), "top").expect("w");
        let then = take(p, &objects, None, Limits::default()).expect("take");
        std::fs::remove_dir_all(p.join("sub")).expect("rm");
        std::os::unix::fs::symlink(outside.path(), p.join("sub")).expect("link");
        std::fs::write(outside.path().join("b.txt"), "theirs").expect("w");
        std::fs::write(p.join("top.txt"), "changed").expect("w");
        let changes = vec![
            Change::Write {
                path: "top.txt".into(),
                digest: then.files["top.txt"].digest.clone().expect("kept"),
                mode: 0o644,
            },
            Change::Write {
                path: "sub/a.txt".into(),
                digest: then.files["sub/a.txt"].digest.clone().expect("kept"),
                mode: 0o644,
            },
            Change::Remove {
                path: "sub/b.txt".into(),
            },
        ];
        let err = restore(p, &objects, &changes).expect_err("refused");
        assert!(err.to_string().contains("sub"), "{err}");
        assert!(!outside.path().join("a.txt").exists());
        assert!(outside.path().join("b.txt").exists());
        assert_eq!(
            std::fs::read_to_string(p.join("top.txt")).expect("r"),
            "changed"
        );
    }
}
