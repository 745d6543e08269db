//! `files` (since 0.1.2): a tool walks a granted folder and takes its files
//! in batches. Through WASI a search makes several host calls per file
//! (open, stat, read, close), one after another on the guest's thread;
//! here one thread walks (the `ignore` crate, ripgrep's walker, so ignore
//! files mean what they mean to ripgrep) and a few read, while the guest
//! works on the batch before.
//!
//! Confinement: the root is resolved and must lie inside a granted folder;
//! each file is then opened relative to that folder with `openat2`
//! (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so a path that a symlink or a
//! folder swapped mid-walk would lead out of the grant is not read, and
//! only regular files are read (opened non-blocking: a FIFO cannot hang a
//! reader).

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::{mpsc as tmpsc, oneshot};
use wasmtime::component::Resource;

use crate::runtime::contract::v0_1::stud::extension::files::{
    self as f, Content, File, WalkOptions,
};
use crate::runtime::host_state::{DirGrant, HostState};
use crate::runtime::protected_paths::FileGuard;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};

/// The most a guest may ask to receive of one file: the SDK's value, so
/// what guests are told and what the host enforces cannot drift apart.
pub const MAX_FILE_BYTES: u64 = stud_protocol::MAX_FILE_BYTES;
/// A batch closes at this many files...
const BATCH_FILES: usize = 64;
/// ...or once its files hold this many bytes.
const BATCH_BYTES: u64 = 4 << 20;
/// Batches read ahead of the guest; bounds a walk's memory.
const READ_AHEAD: usize = 4;
/// Walks one instance may hold open at once (each has threads).
const MAX_OPEN_WALKS: usize = 4;

/// One walk in progress: the batches in walk order, each filled by a
/// reader. Dropping it stops the walker at its next batch.
pub struct FileWalk {
    batches: tmpsc::Receiver<oneshot::Receiver<Vec<File>>>,
    _open: OpenWalk,
}

/// Counts a walk as open until dropped.
struct OpenWalk(Arc<AtomicUsize>);

impl Drop for OpenWalk {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl FileWalk {
    async fn next(&mut self) -> Option<Vec<File>> {
        let batch = self.batches.recv().await?;
        // A reader that died (it cannot panic on file data, but a thread
        // can fail to start) ends the walk rather than hanging it.
        batch.await.ok()
    }
}

/// What a walk needs, checked before any thread starts.
struct Plan {
    /// The granted folder, resolved: files are opened beneath it.
    grant: PathBuf,
    /// The root, resolved (inside `grant`).
    root: PathBuf,
    /// The root as the guest named it, without a trailing `/`.
    guest_root: String,
    options: WalkOptions,
    overrides: Option<ignore::overrides::Override>,
    /// Protected paths are skipped, whatever the globs and ignore files
    /// say (a glob naming `.env` must not un-hide it).
    files: FileGuard,
}

fn invalid(code: &str, message: String) -> ExtError {
    ext_error(ErrorClass::ToolTerminal, code, message)
}

impl Plan {
    fn new(
        ext_id: &str,
        dirs: &[DirGrant],
        files: &FileGuard,
        root: &str,
        options: WalkOptions,
    ) -> Result<Self, ExtError> {
        let guest_root = root.trim_end_matches('/');
        let guest_root = if guest_root.is_empty() {
            "/"
        } else {
            guest_root
        };
        // The longest granted folder that holds the root.
        let (dir, below) = dirs
            .iter()
            .filter_map(|d| {
                let g = d.guest.trim_end_matches('/');
                let rest = guest_root.strip_prefix(g)?;
                (rest.is_empty() || rest.starts_with('/')).then_some((d, rest, g.len()))
            })
            .max_by_key(|(_, _, len)| *len)
            .map(|(d, rest, _)| (d, rest.trim_start_matches('/')))
            .ok_or_else(|| {
                let granted: Vec<&str> = dirs.iter().map(|d| d.guest).collect();
                invalid(
                    "not-granted",
                    format!(
                        "`{root}` is outside the folders extension `{ext_id}` was granted ({}); walk a path inside one of them",
                        if granted.is_empty() { "none".to_string() } else { granted.join(", ") }
                    ),
                )
            })?;
        let below = Path::new(below);
        if below
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(invalid(
                "invalid-path",
                format!(
                    "`{root}` has a `..` or another component that leaves its folder; name the path without it"
                ),
            ));
        }
        let grant = dir.host.canonicalize().map_err(|e| {
            invalid(
                "not-found",
                format!(
                    "the granted folder behind `{}` cannot be opened: {e}",
                    dir.guest
                ),
            )
        })?;
        let root_path = grant
            .join(below)
            .canonicalize()
            .map_err(|e| invalid("not-found", format!("`{root}` cannot be walked: {e}")))?;
        if !root_path.starts_with(&grant) {
            return Err(invalid(
                "not-granted",
                format!(
                    "`{root}` leads out of the folder extension `{ext_id}` was granted (through a symlink); walk a path inside it"
                ),
            ));
        }
        if let Some(project) = &files.project
            && let Some(pattern) = files.protected.protecting_in(project, &root_path)
        {
            return Err(invalid(
                "path-protected",
                format!(
                    "`{root}` matches the protected pattern `{pattern}` (protectedPaths); extensions may not read it unless the user adds its exact path to protectedPaths.allow"
                ),
            ));
        }
        let overrides = if options.globs.is_empty() {
            None
        } else {
            let mut b = ignore::overrides::OverrideBuilder::new(&root_path);
            for g in &options.globs {
                b.add(g)
                    .map_err(|e| invalid("invalid-input", format!("glob `{g}`: {e}")))?;
            }
            Some(
                b.build()
                    .map_err(|e| invalid("invalid-input", format!("globs: {e}")))?,
            )
        };
        Ok(Plan {
            grant,
            root: root_path,
            guest_root: guest_root.to_string(),
            options,
            overrides,
            files: files.clone(),
        })
    }

    /// The walker and the readers, on threads of their own.
    fn start(self, open: OpenWalk) -> Result<FileWalk, ExtError> {
        let (order_tx, order_rx) = tmpsc::channel(READ_AHEAD);
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(job_rx));
        let grant = Arc::new(self.grant.clone());
        let sieve = Sieve::of(&self.files, &self.grant).map(Arc::new);
        let readers = crate::runtime::cores::cores().clamp(1, 4);
        let spawn_failed = |e: std::io::Error| {
            ext_error(
                ErrorClass::ToolTransient,
                "walk-failed",
                format!("cannot start reading files: {e}"),
            )
        };
        for _ in 0..readers {
            let (jobs, grant, sieve) = (jobs.clone(), grant.clone(), sieve.clone());
            std::thread::Builder::new()
                .name("stud-read".into())
                .spawn(move || read_jobs(&jobs, &grant, sieve.as_deref()))
                .map_err(spawn_failed)?;
        }
        std::thread::Builder::new()
            .name("stud-walk".into())
            .spawn(move || self.walk(&order_tx, &job_tx))
            .map_err(spawn_failed)?;
        Ok(FileWalk {
            batches: order_rx,
            _open: open,
        })
    }

    fn walk(&self, order: &tmpsc::Sender<oneshot::Receiver<Vec<File>>>, jobs: &mpsc::Sender<Job>) {
        let max = self.options.max_file_bytes.min(MAX_FILE_BYTES);
        let mut walk = ignore::WalkBuilder::new(&self.root);
        walk.standard_filters(self.options.standard_filters)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        if let Some(o) = &self.overrides {
            walk.overrides(o.clone());
        }
        // Protected folders are not entered; protected files are left out
        // by the readers (`Sieve`), off this thread, which every entry
        // passes through one at a time.
        if let Some(project) = self.files.project.clone() {
            let protected = self.files.protected.clone();
            walk.filter_entry(move |e| {
                !e.file_type().is_some_and(|t| t.is_dir())
                    || protected.protecting_entry(&project, e.path()).is_none()
            });
        }
        let mut batch = Vec::new();
        let mut bytes = 0u64;
        for entry in walk.build().flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(below_grant) = entry.path().strip_prefix(&self.grant) else {
                continue;
            };
            let guest = match entry.path().strip_prefix(&self.root) {
                Ok(p) if p.as_os_str().is_empty() => self.guest_root.clone(),
                Ok(p) => format!(
                    "{}/{}",
                    self.guest_root.trim_end_matches('/'),
                    p.to_string_lossy()
                ),
                Err(_) => continue,
            };
            // The size as the walk saw it: batches stay near BATCH_BYTES,
            // and a file over the limit is not even opened.
            let size = entry.metadata().map_or(0, |m| m.len());
            bytes += size.min(max);
            batch.push(Walked {
                below: below_grant.to_path_buf(),
                guest,
                size,
            });
            if batch.len() >= BATCH_FILES || bytes >= BATCH_BYTES {
                if !send(order, jobs, std::mem::take(&mut batch), max) {
                    return;
                }
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            send(order, jobs, batch, max);
        }
    }
}

/// A file the walk found.
struct Walked {
    /// Its path below the granted folder.
    below: PathBuf,
    guest: String,
    size: u64,
}

/// A batch for a reader.
struct Job {
    files: Vec<Walked>,
    max: u64,
    done: oneshot::Sender<Vec<File>>,
}

/// Queues a batch; `false` once the guest has dropped the walk.
fn send(
    order: &tmpsc::Sender<oneshot::Receiver<Vec<File>>>,
    jobs: &mpsc::Sender<Job>,
    files: Vec<Walked>,
    max: u64,
) -> bool {
    let (done, wait) = oneshot::channel();
    // Blocks while READ_AHEAD batches wait for the guest.
    if order.blocking_send(wait).is_err() {
        return false;
    }
    jobs.send(Job { files, max, done }).is_ok()
}

/// What leaves protected files out of a walk's batches.
struct Sieve {
    protected: Arc<crate::runtime::protected_paths::ProtectedPaths>,
    /// The granted folder below the project (empty when it is the project).
    base: PathBuf,
}

impl Sieve {
    /// `None` when the grant lies outside the project (nothing to check).
    fn of(files: &FileGuard, grant: &Path) -> Option<Self> {
        let project = files.project.as_ref()?;
        Some(Sieve {
            protected: files.protected.clone(),
            base: grant.strip_prefix(project).ok()?.to_path_buf(),
        })
    }

    /// Whether a file at `below` (below the grant) may be read.
    fn keeps(&self, below: &Path) -> bool {
        let hit = if self.base.as_os_str().is_empty() {
            self.protected.protecting_rel_entry(below)
        } else {
            self.protected.protecting_rel_entry(&self.base.join(below))
        };
        hit.is_none()
    }
}

fn read_jobs(jobs: &Mutex<mpsc::Receiver<Job>>, grant: &Path, sieve: Option<&Sieve>) {
    let Ok(dir) = std::fs::File::open(grant) else {
        return;
    };
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let files = job
            .files
            .into_iter()
            .filter(|w| sieve.is_none_or(|s| s.keeps(&w.below)))
            .map(|w| File {
                content: read_one(&dir, grant, &w, job.max),
                path: w.guest,
            })
            .collect();
        let _ = job.done.send(files);
    }
}

fn read_one(dir: &std::fs::File, grant: &Path, file: &Walked, max: u64) -> Content {
    if file.size > max {
        return Content::TooLarge(file.size);
    }
    let mut opened = match open_beneath(dir, grant, &file.below) {
        Ok(f) => f,
        Err(e) => return Content::Unreadable(e.to_string()),
    };
    // No fstat: the walk saw a regular file of this size, and the read is
    // bounded whatever is there now (opened non-blocking, so a FIFO put in
    // its place reads as empty rather than hanging).
    let mut bytes = Vec::with_capacity(file.size as usize);
    match (&mut opened).take(max + 1).read_to_end(&mut bytes) {
        Ok(n) if n as u64 > max => Content::TooLarge(n as u64),
        Ok(_) => Content::Bytes(bytes),
        Err(e) => Content::Unreadable(e.to_string()),
    }
}

/// Opens `below` (relative, no `..`) inside the folder `dir` is open on,
/// refusing any symlink on the way: the walk does not follow them, so one
/// here was put there after the walk saw the path.
#[cfg(target_os = "linux")]
fn open_beneath(dir: &std::fs::File, grant: &Path, below: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
    let flags =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW;
    match openat2(
        dir,
        below,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    ) {
        Ok(fd) => Ok(std::fs::File::from(fd)),
        // Kernels before 5.6 have no openat2; some container seccomp
        // profiles refuse it with EPERM.
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => open_checked(grant, below),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(
    _dir: &std::fs::File,
    grant: &Path,
    below: &Path,
) -> std::io::Result<std::fs::File> {
    open_checked(grant, below)
}

/// Without `openat2`: resolve, check the result is inside the grant, and
/// open it without following a last-moment symlink.
fn open_checked(grant: &Path, below: &Path) -> std::io::Result<std::fs::File> {
    let path = grant.join(below);
    if !path.canonicalize()?.starts_with(grant) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "outside the granted folder",
        ));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

impl f::Host for HostState {
    async fn walk_files(
        &mut self,
        root: String,
        options: WalkOptions,
    ) -> wasmtime::Result<Result<Resource<FileWalk>, ExtError>> {
        let open = self.open_walks.clone();
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_OPEN_WALKS {
            open.fetch_sub(1, Ordering::SeqCst);
            return Ok(Err(invalid(
                "too-many-walks",
                format!(
                    "extension `{}` holds {MAX_OPEN_WALKS} walks open; drop one before starting another",
                    self.ext.id
                ),
            )));
        }
        let open = OpenWalk(open);
        let walk = Plan::new(
            self.ext.id.as_str(),
            &self.ext.dirs,
            &self.ext.files,
            &root,
            options,
        )
        .and_then(|plan| plan.start(open));
        match walk {
            Ok(walk) => Ok(Ok(self.table().push(walk)?)),
            Err(e) => Ok(Err(e)),
        }
    }
}

impl f::HostWalk for HostState {
    async fn next_batch(
        &mut self,
        this: Resource<FileWalk>,
    ) -> wasmtime::Result<Option<Vec<File>>> {
        let cancel = self.deadline.cancelled();
        let walk = self.table().get_mut(&this)?;
        Ok(tokio::select! {
            batch = walk.next() => batch,
            () = cancel => None,
        })
    }

    async fn drop(&mut self, this: Resource<FileWalk>) -> wasmtime::Result<()> {
        self.table().delete(this)?;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn grant(dir: &Path) -> Vec<DirGrant> {
        vec![DirGrant {
            host: dir.to_path_buf(),
            guest: "/project",
            access: crate::manifest::FsAccess::Read,
        }]
    }

    fn options() -> WalkOptions {
        WalkOptions {
            standard_filters: true,
            globs: Vec::new(),
            max_file_bytes: MAX_FILE_BYTES,
        }
    }

    fn code(r: Result<Plan, ExtError>) -> String {
        r.err().map(|e| e.code).unwrap_or_default()
    }

    #[test]
    fn roots_outside_the_grant_are_refused_before_any_thread_starts() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("out")).unwrap();
        std::fs::create_dir(project.path().join("sub")).unwrap();
        let dirs = grant(project.path());
        let plan = |root: &str| Plan::new("t", &dirs, &FileGuard::default(), root, options());
        assert_eq!(code(plan("/project/out")), "not-granted");
        assert_eq!(code(plan("/projectx")), "not-granted");
        assert_eq!(code(plan("/")), "not-granted");
        assert_eq!(code(plan("/project/sub/..")), "invalid-path");
        assert_eq!(code(plan("/project/missing")), "not-found");
        let ok = plan("/project/sub/").expect("inside");
        assert_eq!(ok.guest_root, "/project/sub");
        assert!(ok.root.ends_with("sub"));
    }

    /// The fallback for kernels without `openat2` checks the resolved
    /// path and refuses a last-moment symlink.
    #[test]
    fn the_checked_open_stays_inside_the_grant() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::write(project.path().join("ok"), "fine").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), project.path().join("link"))
            .unwrap();
        let grant = project.path().canonicalize().unwrap();
        assert!(open_checked(&grant, Path::new("ok")).is_ok());
        let refused = open_checked(&grant, Path::new("link")).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
        let dir = std::fs::File::open(&grant).unwrap();
        assert!(open_beneath(&dir, &grant, Path::new("link")).is_err());
        let file = Walked {
            below: PathBuf::from("ok"),
            guest: "/project/ok".into(),
            size: 4,
        };
        assert!(matches!(read_one(&dir, &grant, &file, 100), Content::Bytes(b) if b == b"fine"));
        assert!(matches!(
            read_one(&dir, &grant, &file, 3),
            Content::TooLarge(4)
        ));
    }
}
