//! In a git repository a snapshot is also an unreferenced commit, so the
//! person can look at it with git (`git diff <commit>`, `git show`), as
//! Codex's ghost commits allow. It is written in-process as loose
//! objects, the way `git hash-object -w`, `git write-tree` and `git
//! commit-tree` would write them, without an index at all: the person's
//! index, HEAD, branches and stash are never read for writing or touched.
//! A blob git already has (loose, or in a pack) is not written again.
//! Nothing refers to the commit, so `git gc` may prune it after
//! `gc.pruneExpire` (two weeks by default); restores never depend on it
//! (they read the checkpoint store).

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha1::{Digest as _, Sha1};

use super::capture::Snapshot;
use super::objects::Objects;

/// An object id.
pub type Oid = [u8; 20];

/// The object database of the repository a project lies in.
#[derive(Debug)]
pub struct GitObjects {
    dir: PathBuf,
    /// The pack indexes' ids, read once (a pack written later is not
    /// seen: at worst a blob is written loose twice).
    packed: OnceLock<Vec<Vec<u8>>>,
    /// Blob ids by checkpoint digest: a file kept before is not hashed
    /// again.
    blobs: Mutex<HashMap<String, Oid>>,
}

impl GitObjects {
    /// The objects folder of the repository whose work tree is `root`:
    /// `root/.git` a real folder, or a file naming a linked worktree's git
    /// folder that names this `.git` back. `None` otherwise (outside git, a
    /// `.git` link, a file naming any other folder): the project's files
    /// decide where stud writes only when git's own layout vouches for it.
    pub fn of_work_tree(root: &Path) -> Option<GitObjects> {
        let dot = root.join(".git");
        let meta = std::fs::symlink_metadata(&dot).ok()?;
        let git_dir = if meta.is_dir() {
            dot
        } else if meta.is_file() {
            let text = std::fs::read_to_string(&dot).ok()?;
            let named = text.strip_prefix("gitdir:")?.trim();
            let p = Path::new(named);
            let git_dir = if p.is_absolute() {
                p.to_path_buf()
            } else {
                root.join(p)
            };
            // A linked worktree's git folder keeps the path of the `.git`
            // file that names it.
            let back = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
            let same = Path::new(back.trim()).canonicalize().ok()? == dot.canonicalize().ok()?;
            if !same {
                return None;
            }
            git_dir
        } else {
            return None;
        };
        // A linked worktree shares the main repository's objects.
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(c) => git_dir.join(c.trim()),
            Err(_) => git_dir,
        };
        let dir = common.join("objects");
        dir.is_dir().then(|| GitObjects {
            dir,
            packed: OnceLock::new(),
            blobs: Mutex::default(),
        })
    }

    fn loose(&self, id: &Oid) -> PathBuf {
        let hex = hex::encode(id);
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Whether git has the object (loose or packed).
    pub fn has(&self, id: &Oid) -> bool {
        self.loose(id).is_file() || self.packs().iter().any(|idx| pack_has(idx, id))
    }

    fn packs(&self) -> &[Vec<u8>] {
        self.packed.get_or_init(|| {
            std::fs::read_dir(self.dir.join("pack"))
                .map(|d| {
                    d.filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "idx"))
                        .filter_map(|p| std::fs::read(p).ok())
                        .filter(|b| {
                            b.starts_with(b"\xfftOc\x00\x00\x00\x02") && b.len() >= 8 + 1024
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// The blob of the content the checkpoint store keeps as `digest`.
    fn blob_of(&self, store: &Objects, digest: &str) -> std::io::Result<Oid> {
        let cached = self
            .blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(digest)
            .copied();
        if let Some(id) = cached {
            return Ok(id);
        }
        let id = self.put("blob", &store.get(digest)?)?;
        self.blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(digest.to_string(), id);
        Ok(id)
    }

    /// Keep an object of `kind`; its id. Written (zlib, through a temp
    /// file and a rename, read-only as git leaves its objects) only when
    /// git does not have it.
    pub fn put(&self, kind: &str, body: &[u8]) -> std::io::Result<Oid> {
        let id = object_id(kind, body);
        if self.has(&id) {
            return Ok(id);
        }
        let path = self.loose(&id);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(format!("{kind} {}\0", body.len()).as_bytes())?;
        z.write_all(body)?;
        let bytes = z.finish()?;
        let mut tmp = tempfile::Builder::new()
            .prefix("tmp_obj_")
            .tempfile_in(dir)?;
        tmp.write_all(&bytes)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o444))?;
        }
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(id)
    }
}

/// A git object id of `body` as `kind`.
pub fn object_id(kind: &str, body: &[u8]) -> Oid {
    let mut h = Sha1::new();
    h.update(format!("{kind} {}\0", body.len()).as_bytes());
    h.update(body);
    h.finalize().into()
}

/// Whether a version-2 pack index lists `id`: its fan-out table bounds
/// the range of sorted ids to search.
fn pack_has(idx: &[u8], id: &Oid) -> bool {
    let fan = |i: usize| -> usize {
        let at = 8 + 4 * i;
        idx.get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let first = usize::from(id[0]);
    let lo = if first == 0 { 0 } else { fan(first - 1) };
    let hi = fan(first);
    let total = fan(255);
    let ids = 8 + 1024;
    let Some(table) = idx.get(ids..ids + 20 * total) else {
        return false;
    };
    let (mut lo, mut hi) = (lo, hi.min(total));
    while lo < hi {
        let mid = (lo + hi) / 2;
        match table[20 * mid..20 * mid + 20].cmp(id.as_slice()) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

enum Node {
    File { mode: u32, id: Oid },
    Dir(BTreeMap<String, Node>),
}

/// The snapshot as a commit, its contents read from the checkpoint
/// store; files it could not keep (too large) are left out.
pub fn commit(
    git: &GitObjects,
    store: &Objects,
    snap: &Snapshot,
    message: &str,
) -> std::io::Result<String> {
    let mut root = BTreeMap::new();
    for (path, e) in &snap.files {
        let Some(digest) = &e.digest else { continue };
        let id = git.blob_of(store, digest)?;
        let parts: Vec<&str> = path.split('/').collect();
        insert(&mut root, &parts, Node::File { mode: e.mode, id });
    }
    let tree = write_tree(git, &root)?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let body = format!(
        "tree {}\nauthor stud <stud@localhost> {secs} +0000\ncommitter stud <stud@localhost> {secs} +0000\n\n{message}\n",
        hex::encode(tree)
    );
    Ok(hex::encode(git.put("commit", body.as_bytes())?))
}

/// Put `node` at `parts` under `dir`, making folders on the way.
fn insert(dir: &mut BTreeMap<String, Node>, parts: &[&str], node: Node) {
    match parts {
        [] => {}
        [name] => {
            dir.insert((*name).to_string(), node);
        }
        [first, rest @ ..] => {
            let sub = dir
                .entry((*first).to_string())
                .or_insert_with(|| Node::Dir(BTreeMap::new()));
            // A file and a folder of one name cannot both be.
            if let Node::Dir(d) = sub {
                insert(d, rest, node);
            }
        }
    }
}

/// A folder as a tree object, in git's order (a folder sorts as if its
/// name ended in `/`).
fn write_tree(git: &GitObjects, dir: &BTreeMap<String, Node>) -> std::io::Result<Oid> {
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (name, node) in dir {
        let (mode, id, key) = match node {
            Node::File { mode, id } => {
                let mode = if mode & 0o111 != 0 {
                    "100755"
                } else {
                    "100644"
                };
                (mode, *id, name.clone().into_bytes())
            }
            Node::Dir(d) => (
                "40000",
                write_tree(git, d)?,
                format!("{name}/").into_bytes(),
            ),
        };
        let mut bytes = format!("{mode} {name}\0").into_bytes();
        bytes.extend_from_slice(&id);
        entries.push((key, bytes));
    }
    entries.sort();
    let body: Vec<u8> = entries.into_iter().flat_map(|(_, b)| b).collect();
    git.put("tree", &body)
}

#[cfg(test)]
mod tests {
    use super::super::capture::{Limits, take};
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn loose(repo: &Path) -> usize {
        std::fs::read_dir(repo.join(".git/objects"))
            .expect("objects")
            .filter_map(Result::ok)
            .filter(|d| d.file_name().len() == 2)
            .map(|d| std::fs::read_dir(d.path()).map_or(0, |f| f.count()))
            .sum()
    }

    /// The attack: a project's `.git` file (or link) naming a folder
    /// elsewhere that has an `objects` folder. No git form: nothing is
    /// written there (the checkpoint store still keeps the snapshot). A
    /// real linked worktree is recognised.
    #[test]
    fn a_git_file_naming_another_folder_is_not_followed() {
        let project = tempfile::tempdir().expect("p");
        let elsewhere = tempfile::tempdir().expect("e");
        std::fs::create_dir_all(elsewhere.path().join("objects")).expect("mkdir");
        std::fs::write(
            project.path().join(".git"),
            format!("gitdir: {}\n", elsewhere.path().display()),
        )
        .expect("w");
        assert!(GitObjects::of_work_tree(project.path()).is_none());
        #[cfg(unix)]
        {
            let linked = tempfile::tempdir().expect("l");
            std::os::unix::fs::symlink(elsewhere.path(), linked.path().join(".git")).expect("link");
            assert!(GitObjects::of_work_tree(linked.path()).is_none());
        }
        let repo = tempfile::tempdir().expect("repo");
        git(repo.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(repo.path().join("a"), "a").expect("w");
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-qm", "one"]);
        let tree = repo.path().join("wt");
        git(
            repo.path(),
            &[
                "worktree",
                "add",
                "-q",
                tree.to_str().expect("utf8"),
                "-b",
                "side",
            ],
        );
        let objects = GitObjects::of_work_tree(&tree).expect("a linked worktree");
        assert_eq!(
            objects.dir.canonicalize().expect("c"),
            repo.path().join(".git/objects").canonicalize().expect("c")
        );
    }

    /// What git itself makes of the commit: the same blob ids as `git
    /// hash-object`, the modes, a clean fsck; packed blobs not written
    /// again; the index and refs untouched.
    #[test]
    fn git_reads_the_checkpoint_commit_as_its_own() {
        let repo = tempfile::tempdir().expect("repo");
        let store = tempfile::tempdir().expect("store");
        let p = repo.path();
        git(p, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(p.join("src/deep")).expect("mkdir");
        std::fs::write(p.join("src/lib.rs"), "fn main() {}\n").expect("w");
        std::fs::write(p.join("src/deep/x.txt"), "x\n").expect("w");
        std::fs::write(p.join("src-file"), "sorts after src/\n").expect("w");
        std::fs::write(p.join("run.sh"), "echo hi\n").expect("w");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        git(p, &["add", "-A"]);
        git(p, &["commit", "-qm", "one"]);
        git(p, &["gc", "-q"]);
        assert_eq!(loose(p), 0, "all packed");
        std::fs::write(p.join("untracked.txt"), "new\n").expect("w");
        let index = std::fs::read(p.join(".git/index")).expect("index");
        let head = git(p, &["rev-parse", "HEAD"]);
        let objects = GitObjects::of_work_tree(p).expect("a repo");
        let kept = Objects::at(store.path());
        let snap = take(p, &kept, None, Limits::default()).expect("take");
        let commit = commit(&objects, &kept, &snap, "stud checkpoint").expect("commit");
        assert_eq!(std::fs::read(p.join(".git/index")).expect("index"), index);
        assert_eq!(git(p, &["rev-parse", "HEAD"]), head);
        assert_eq!(git(p, &["status", "--porcelain"]), "?? untracked.txt\n");
        // Written: the untracked file's blob, the root tree (the others
        // are the committed ones, already packed) and the commit.
        assert_eq!(loose(p), 3);
        assert_eq!(git(p, &["cat-file", "-t", &commit]).trim(), "commit");
        let listed = git(p, &["ls-tree", "-r", &commit]);
        for (path, mode) in [
            ("run.sh", "100755"),
            ("src-file", "100644"),
            ("src/deep/x.txt", "100644"),
            ("src/lib.rs", "100644"),
            ("untracked.txt", "100644"),
        ] {
            let id = git(p, &["hash-object", path]);
            assert!(
                listed.contains(&format!("{mode} blob {}\t{path}", id.trim())),
                "{path} in\n{listed}"
            );
        }
        git(p, &["fsck", "--strict", "--no-dangling"]);
        // Against the tree it was taken of, nothing tracked differs; a
        // later change shows.
        assert_eq!(
            git(p, &["diff", "--stat", &commit, "--", "src", "run.sh"]),
            ""
        );
        std::fs::write(p.join("src/lib.rs"), "fn main() { later() }\n").expect("w");
        assert!(git(p, &["diff", "--stat", &commit, "--", "src"]).contains("src/lib.rs | 2 +-"));
    }
}
