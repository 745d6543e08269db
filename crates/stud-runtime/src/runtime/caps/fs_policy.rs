//! The protected-path policy inside WASI: `wasi:filesystem` calls that open,
//! move, alias or remove a file are checked against
//! [`ProtectedPaths`](crate::runtime::protected_paths::ProtectedPaths) on
//! the path the file system resolved. wasmtime-wasi's own implementation
//! is linked first; these definitions shadow its five path calls and hand
//! each call on to it once allowed.
//!
//! - `open-at` is checked after the open, on what was really opened (the
//!   descriptor's path from the kernel), so a symlink, `..` or a renamed
//!   folder cannot lead past it. An open that would change the file first
//!   (create, truncate) is also checked before: a truncation is done only
//!   after the check.
//! - `rename-at`, `link-at`, `unlink-file-at` and `symlink-at` are refused
//!   when either end is protected, so a protected file can be neither
//!   moved to an unprotected name, linked there, removed nor replaced.
//!
//! A refusal is `error-code::access` to the guest and a warning naming the
//! file and the pattern to the person.

use std::path::{Path, PathBuf};

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

use crate::runtime::host_state::HostState;
use crate::runtime::protected_paths::{ProtectedPaths, climbs, join_lexical};
use crate::runtime::services::LogLevel;

/// The `wasi:filesystem/types` instance wasmtime-wasi 48 links (guests
/// importing an older 0.2.x resolve to it).
const TYPES: &str = "wasi:filesystem/types@0.2.12";

type Answer<T> = wasmtime::Result<Result<T, ErrorCode>>;

/// Shadow wasmtime-wasi's path calls with policy-checked ones. Call after
/// `wasmtime_wasi::p2::add_to_linker_async`.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, path, oflags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let r = open_at(store.data_mut(), fd, path_flags, path, oflags, flags).await?;
                Ok((r,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, old, new_fd, new): (Resource<Descriptor>, String, Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if let Some(refused) = state.refuse_rename(&fd, &old, &new_fd, &new)? {
                    return Ok((Err(refused),));
                }
                let r = HostDescriptor::rename_at(&mut state.filesystem(), fd, old, new_fd, new).await;
                Ok((answer(r)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, flags, old, new_fd, new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                if let Some(refused) = state.refuse_either(&fd, &old, &new_fd, &new, "link")? {
                    return Ok((Err(refused),));
                }
                let r =
                    HostDescriptor::link_at(&mut state.filesystem(), fd, flags, old, new_fd, new)
                        .await;
                Ok((answer(r)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if let Some(refused) = state.refuse_entry(&fd, &path, "remove")? {
                    return Ok((Err(refused),));
                }
                let r = HostDescriptor::unlink_file_at(&mut state.filesystem(), fd, path).await;
                Ok((answer(r)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, target, path): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if let Some(refused) = state.refuse_entry(&fd, &path, "replace")? {
                    return Ok((Err(refused),));
                }
                let r = HostDescriptor::symlink_at(&mut state.filesystem(), fd, target, path).await;
                Ok((answer(r)?,))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// wasmtime-wasi's result as the guest gets it (a trap stays a trap).
fn answer<T>(r: Result<T, FsError>) -> Answer<T> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) => Ok(Err(e.downcast()?)),
    }
}

async fn open_at(
    state: &mut HostState,
    fd: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> Answer<Resource<Descriptor>> {
    let Some(project) = state.ext.files.project.clone() else {
        let r =
            HostDescriptor::open_at(&mut state.filesystem(), fd, path_flags, path, oflags, flags)
                .await;
        return answer(r);
    };
    let changes = oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE)
        || flags.contains(DescriptorFlags::WRITE);
    if changes {
        let dir = state.dir_path(&fd)?;
        let target = dir.as_deref().and_then(|d| join_lexical(d, &path));
        match target {
            Some(target) => {
                if let Some(refused) =
                    state.refuse_path(&project, &resolve_follow(&target), "write")
                {
                    return Ok(Err(refused));
                }
            }
            None if dir.is_none() => return Ok(Err(state.unknown_path(&path))),
            // Climbing out: WASI refuses it itself.
            None => {}
        }
    }
    // Truncate only once the file opened is known not to be protected
    // (opened for writing, as a truncating open is).
    let truncate = oflags.contains(OpenFlags::TRUNCATE);
    let flags = if truncate {
        flags | DescriptorFlags::WRITE
    } else {
        flags
    };
    let r = HostDescriptor::open_at(
        &mut state.filesystem(),
        fd,
        path_flags,
        path.clone(),
        oflags & !OpenFlags::TRUNCATE,
        flags,
    )
    .await;
    let opened = match answer(r)? {
        Ok(d) => d,
        Err(e) => return Ok(Err(e)),
    };
    let real = real_path(state.table().get(&opened)?);
    let refused = match &real {
        Some(real) => state.refuse_path(&project, real, "open"),
        None => Some(state.unknown_path(&path)),
    };
    if let Some(refused) = refused {
        state.table().delete(opened)?;
        return Ok(Err(refused));
    }
    if truncate {
        let cut = match state.table().get(&opened)? {
            Descriptor::File(f) => f.file.set_len(0),
            Descriptor::Dir(_) => Ok(()),
        };
        if let Err(e) = cut {
            state.table().delete(opened)?;
            return Ok(Err(ErrorCode::from(&e)));
        }
    }
    Ok(Ok(opened))
}

impl HostState {
    /// The real path of the directory `fd` stands for (`None` when the
    /// kernel cannot say).
    fn dir_path(&mut self, fd: &Resource<Descriptor>) -> wasmtime::Result<Option<PathBuf>> {
        Ok(real_path(self.table().get(fd)?))
    }

    /// `Some(error)` when `path` (relative to the directory `fd`, its last
    /// component not followed) is protected.
    fn refuse_entry(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        what: &str,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        let Some(project) = self.ext.files.project.clone() else {
            return Ok(None);
        };
        if climbs(path) {
            return Ok(Some(self.refuse_climb(path, what)));
        }
        let Some(dir) = self.dir_path(fd)? else {
            return Ok(Some(self.unknown_path(path)));
        };
        Ok(match join_lexical(&dir, path) {
            Some(p) => self.refuse_path(&project, &resolve_parent(&p), what),
            // Climbing out: WASI refuses it itself.
            None => None,
        })
    }

    /// A rename is refused when either end is protected, and when what it
    /// moves is a folder holding a protected path (moved, `deploy/creds/db`
    /// would no longer match `deploy/creds/*`).
    fn refuse_rename(
        &mut self,
        fd: &Resource<Descriptor>,
        old: &str,
        new_fd: &Resource<Descriptor>,
        new: &str,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        if let Some(e) = self.refuse_either(fd, old, new_fd, new, "rename")? {
            return Ok(Some(e));
        }
        let (Some(project), Some(dir)) = (self.ext.files.project.clone(), self.dir_path(fd)?)
        else {
            return Ok(None);
        };
        let Some(moved) = join_lexical(&dir, old).map(|p| resolve_parent(&p)) else {
            return Ok(None);
        };
        if !moved.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            return Ok(None);
        }
        Ok(
            match protected_inside(&self.ext.files.protected, &project, &moved) {
                Inside::Nothing => None,
                Inside::Found(path) => self.refuse_path(&project, &path, "move the folder holding"),
                Inside::TooMany => {
                    self.ext.services.log(
                    &self.ext.id,
                    LogLevel::Warn,
                    &format!(
                        "refused to rename `{old}`: it holds more than {MAX_CHECKED} entries, too many to check for protected files (protectedPaths)"
                    ),
                );
                    Some(ErrorCode::Access)
                }
            },
        )
    }

    /// Closed world: `..` in a path that moves, links or removes an entry.
    fn refuse_climb(&self, path: &str, what: &str) -> ErrorCode {
        self.ext.services.log(
            &self.ext.id,
            LogLevel::Warn,
            &format!(
                "refused to {what} `{path}`: paths with `..` are not followed for this (a folder link before it could lead anywhere); name the path without it"
            ),
        );
        ErrorCode::Access
    }

    fn refuse_either(
        &mut self,
        fd: &Resource<Descriptor>,
        old: &str,
        new_fd: &Resource<Descriptor>,
        new: &str,
        what: &str,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        if let Some(e) = self.refuse_entry(fd, old, what)? {
            return Ok(Some(e));
        }
        self.refuse_entry(new_fd, new, what)
    }

    /// `Some(error)`, and a warning to the person, when `real` is
    /// protected.
    fn refuse_path(&self, project: &Path, real: &Path, what: &str) -> Option<ErrorCode> {
        let pattern = self.ext.files.protected.protecting_in(project, real)?;
        let shown = real.strip_prefix(project).unwrap_or(real);
        self.ext.services.log(
            &self.ext.id,
            LogLevel::Warn,
            &format!(
                "refused to {what} `{}`: it matches the protected pattern `{pattern}` (protectedPaths); to let extensions use this file, add its exact path to protectedPaths.allow in ~/.stud/settings.json",
                shown.display()
            ),
        );
        Some(ErrorCode::Access)
    }

    /// Closed world: a path whose real location cannot be told is refused.
    fn unknown_path(&self, path: &str) -> ErrorCode {
        self.ext.services.log(
            &self.ext.id,
            LogLevel::Warn,
            &format!(
                "refused `{path}`: where it leads cannot be told on this system, so the protected-path policy cannot check it"
            ),
        );
        ErrorCode::Access
    }
}

/// Entries a folder move looks through for protected paths, at most.
const MAX_CHECKED: usize = 20_000;

/// What a folder holds, as far as the policy goes.
enum Inside {
    Nothing,
    Found(PathBuf),
    TooMany,
}

/// The first protected path inside `dir` (links not followed).
fn protected_inside(protected: &ProtectedPaths, project: &Path, dir: &Path) -> Inside {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_CHECKED {
                return Inside::TooMany;
            }
            let path = entry.path();
            if protected.protecting_in(project, &path).is_some() {
                return Inside::Found(path);
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    Inside::Nothing
}

/// `path` with every symlink resolved; for a path that does not exist
/// (yet), its existing folder resolved and the rest kept.
fn resolve_follow(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| resolve_parent(path))
}

/// `path`'s folder resolved, its last component kept as written (the
/// entry itself, not what it links to).
fn resolve_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// The path the kernel has for an open descriptor.
fn real_path(d: &Descriptor) -> Option<PathBuf> {
    let file = match d {
        Descriptor::File(f) => &f.file,
        Descriptor::Dir(d) => &d.dir,
    };
    fd_path(file)
}

#[cfg(target_os = "linux")]
fn fd_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(target_os = "macos")]
fn fd_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes into `buf`, which is
    // that long, and the descriptor is open for as long as `file` lives.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) };
    if r == -1 {
        return None;
    }
    let len = buf.iter().position(|b| *b == 0)?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..len])))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn fd_path(_file: &std::fs::File) -> Option<PathBuf> {
    None
}
