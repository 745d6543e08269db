//! Taking a snapshot: walk the project as `grep` does (`.gitignore`
//! respected, hidden files kept, `.git` never), stat every file, and read
//! only those whose size or mtime changed since the previous snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::objects::Objects;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i128,
    /// `None`: too large to keep (said in `Snapshot::skipped`).
    pub digest: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Project-relative paths with `/`.
    pub files: BTreeMap<String, Entry>,
    /// Files not kept, and why (too large, over the snapshot's bound).
    pub skipped: Vec<String>,
    /// When the walk began (ns since the epoch): a file modified close to
    /// it may change again within the same mtime tick, so the next
    /// snapshot reads it again (git's "racy" entries).
    #[serde(default)]
    pub taken_ns: i128,
}

impl Snapshot {
    /// The same files (whenever and however it was taken).
    pub fn same_tree(&self, other: &Snapshot) -> bool {
        self.files == other.files && self.skipped == other.skipped
    }
}

/// How close to a snapshot's start an mtime must be for the file to be
/// read again next time: above the coarsest mtime clock tick in use
/// (ext4 takes the kernel's tick, 4 ms at 250 Hz).
const RACY_NS: i128 = 20_000_000;

/// Bounds on what one snapshot keeps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_file_bytes: u64,
    /// New content read by one snapshot (what changed since the last).
    pub max_new_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 8 * 1024 * 1024,
            max_new_bytes: 256 * 1024 * 1024,
        }
    }
}

/// Which files a snapshot covers besides the bounds.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    /// Keep files the ignore rules leave out (`checkpoints.includeIgnored`).
    pub include_ignored: bool,
    /// A folder never kept (the stud home, when it lies in the project).
    pub exclude: Option<std::path::PathBuf>,
}

/// The project's state now; `previous` spares reading what did not change.
pub fn take(
    root: &Path,
    objects: &Objects,
    previous: Option<&Snapshot>,
    limits: Limits,
) -> std::io::Result<Snapshot> {
    take_covering(root, objects, previous, limits, &Coverage::default())
}

/// [`take`] with a chosen coverage.
pub fn take_covering(
    root: &Path,
    objects: &Objects,
    previous: Option<&Snapshot>,
    limits: Limits,
    coverage: &Coverage,
) -> std::io::Result<Snapshot> {
    let mut out = Snapshot {
        taken_ns: now_ns(),
        ..Snapshot::default()
    };
    let mut new_bytes = 0u64;
    let found = walk(root, coverage);
    let mut files: Vec<(String, Entry)> = Vec::with_capacity(found.len());
    // Both lists are sorted by path: one pass pairs them (no lookups).
    let mut earlier = previous.map(|p| p.files.iter().peekable());
    for found in found {
        let Found {
            rel,
            mode,
            size,
            mtime_ns,
        } = found;
        let mut prev = None;
        if let Some(it) = earlier.as_mut() {
            while it.peek().is_some_and(|(p, _)| p.as_str() < rel.as_str()) {
                it.next();
            }
            if it.peek().is_some_and(|(p, _)| **p == rel) {
                prev = it.next().map(|(_, e)| e);
            }
        }
        if let Some(before) = previous
            && let Some(prev) = prev
            && prev.size == size
            && prev.mtime_ns == mtime_ns
            && prev.mode == mode
            && prev.digest.is_some()
            && before.taken_ns - mtime_ns > RACY_NS
        {
            files.push((rel, prev.clone()));
            continue;
        }
        let digest = if size > limits.max_file_bytes {
            out.skipped.push(format!(
                "{rel}: {size} bytes, over {} per file",
                limits.max_file_bytes
            ));
            None
        } else if new_bytes + size > limits.max_new_bytes {
            out.skipped.push(format!(
                "{rel}: the snapshot's bound of {} new bytes was reached",
                limits.max_new_bytes
            ));
            None
        } else {
            new_bytes += size;
            match std::fs::read(root.join(&rel)) {
                Ok(bytes) => Some(objects.put(&bytes)?),
                // Gone since the walk saw it: it is not there.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        };
        files.push((
            rel,
            Entry {
                mode,
                size,
                mtime_ns,
                digest,
            },
        ));
    }
    // Sorted and unique: the map is built in bulk.
    out.files = files.into_iter().collect();
    Ok(out)
}

/// A regular file the walk found, with its stat.
struct Found {
    rel: String,
    mode: u32,
    size: u64,
    mtime_ns: i128,
}

/// Every regular file a snapshot covers, stat'ed, walked on several
/// threads (the walk and its stats are most of a snapshot's cost). A file
/// that vanishes mid-walk is left out.
fn walk(root: &Path, coverage: &Coverage) -> Vec<Found> {
    use ignore::{ParallelVisitor, ParallelVisitorBuilder, WalkState};
    use std::sync::{Arc, Mutex};

    struct Sink {
        root: std::path::PathBuf,
        local: Vec<Found>,
        all: Arc<Mutex<Vec<Found>>>,
    }
    impl Drop for Sink {
        fn drop(&mut self) {
            let mut all = self.all.lock().unwrap_or_else(|p| p.into_inner());
            all.append(&mut self.local);
        }
    }
    impl ParallelVisitor for Sink {
        fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file())
                || entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(super::restore::TEMP_PREFIX))
            {
                return WalkState::Continue;
            }
            let Some(rel) = entry
                .path()
                .strip_prefix(&self.root)
                .ok()
                .and_then(|p| p.to_str())
                .map(|p| {
                    if cfg!(windows) {
                        p.replace('\\', "/")
                    } else {
                        p.to_string()
                    }
                })
            else {
                return WalkState::Continue;
            };
            if let Ok(meta) = entry.metadata() {
                let (mode, mtime_ns) = stat_parts(&meta);
                self.local.push(Found {
                    rel,
                    mode,
                    size: meta.len(),
                    mtime_ns,
                });
            }
            WalkState::Continue
        }
    }
    struct Sinks {
        root: std::path::PathBuf,
        all: Arc<Mutex<Vec<Found>>>,
    }
    impl<'s> ParallelVisitorBuilder<'s> for Sinks {
        fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
            Box::new(Sink {
                root: self.root.clone(),
                local: Vec::new(),
                all: self.all.clone(),
            })
        }
    }

    let exclude = coverage.exclude.clone();
    let threads = crate::runtime::cores::cores().min(4);
    let all = Arc::new(Mutex::new(Vec::new()));
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .follow_links(false)
        .standard_filters(!coverage.include_ignored)
        .hidden(false)
        .threads(threads)
        .filter_entry(move |e| {
            e.file_name() != ".git" && exclude.as_deref().is_none_or(|x| e.path() != x)
        })
        .build_parallel()
        .visit(&mut Sinks {
            root: root.to_path_buf(),
            all: all.clone(),
        });
    let mut found = std::mem::take(&mut *all.lock().unwrap_or_else(|p| p.into_inner()));
    found.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    found
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(unix)]
fn stat_parts(meta: &std::fs::Metadata) -> (u32, i128) {
    use std::os::unix::fs::MetadataExt as _;
    (
        meta.mode() & 0o7777,
        i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    )
}

#[cfg(not(unix))]
fn stat_parts(meta: &std::fs::Metadata) -> (u32, i128) {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    (
        if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        },
        mtime,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_files_are_not_read_again_and_ignored_ones_not_kept() {
        let project = tempfile::tempdir().expect("p");
        let store = tempfile::tempdir().expect("s");
        let objects = Objects::at(store.path());
        std::fs::write(project.path().join(".gitignore"), "target/\n").expect("w");
        std::fs::create_dir_all(project.path().join("target")).expect("mkdir");
        std::fs::write(project.path().join("target/big.o"), "x").expect("w");
        std::fs::write(project.path().join("a.txt"), "one").expect("w");
        let first = take(project.path(), &objects, None, Limits::default()).expect("take");
        assert!(first.files.contains_key("a.txt") && first.files.contains_key(".gitignore"));
        assert!(!first.files.keys().any(|k| k.starts_with("target")));
        // A second snapshot keeps an unchanged file's digest (a stat, no
        // read).
        let digest = first.files["a.txt"].digest.clone().expect("kept");
        let again = take(project.path(), &objects, Some(&first), Limits::default()).expect("take");
        assert_eq!(
            again.files["a.txt"].digest.as_deref(),
            Some(digest.as_str())
        );
        let tight = Limits {
            max_file_bytes: 2,
            max_new_bytes: 1024,
        };
        let small = take(
            project.path(),
            &Objects::at(store.path().join("other")),
            None,
            tight,
        )
        .expect("take");
        assert_eq!(small.files["a.txt"].digest, None);
        assert!(
            small.skipped.iter().any(|s| s.starts_with("a.txt")),
            "{:?}",
            small.skipped
        );
    }
}
