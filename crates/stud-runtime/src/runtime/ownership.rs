//! Whether a file or folder is this user's alone: what stud reads code or
//! keys from must be, or someone else could change it after the check.

/// Owned by this user, with none of the `others` mode bits (0o022: no one
/// else may write it; 0o077: nor read it). Any file type; the caller says
/// which it expects.
#[cfg(unix)]
pub fn owned_by_me_without(meta: &std::fs::Metadata, others: u32) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    meta.uid() == me && meta.mode() & others == 0
}

/// No owners or mode bits to check.
#[cfg(not(unix))]
pub fn owned_by_me_without(_meta: &std::fs::Metadata, _others: u32) -> bool {
    true
}

/// Who besides this user could replace what a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Another user owns it (its owner may do anything with it).
    Owner { uid: u32 },
    /// Its group may write it, and the group is not this user's alone.
    Group { mode: u32 },
    /// Everyone may write it (and no sticky bit keeps them to their own
    /// entries, or the folder is the one whose entries matter).
    Others { mode: u32 },
}

/// Where a folder is, for [`folder_exposure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderRole {
    /// The folder whose contents stud trusts: only its owner may write it.
    Holder,
    /// A folder on the way to it (whoever may write it could rename the
    /// holder away and put another in its place): root may own it, and
    /// a sticky folder others may write (`/tmp`) keeps them to their own
    /// entries.
    Ancestor,
}

/// Who besides this user could change a folder's entries: none (`None`)
/// when it is this user's (or, on the way, root's), its group may not
/// write it or the group is this user's private group (the Debian,
/// Ubuntu and Fedora layout, where the umask is 002), and others may not
/// write it. What cannot be looked up counts as exposed.
#[cfg(unix)]
pub fn folder_exposure(meta: &std::fs::Metadata, role: FolderRole) -> Option<Exposure> {
    use std::os::unix::fs::MetadataExt as _;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mode = meta.mode() & 0o7777;
    let uid = meta.uid();
    let sticky = mode & 0o1000 != 0;
    if uid != me && !(role == FolderRole::Ancestor && uid == 0) {
        return Some(Exposure::Owner { uid });
    }
    if mode & 0o002 != 0 && !(role == FolderRole::Ancestor && sticky) {
        return Some(Exposure::Others { mode });
    }
    if mode & 0o020 != 0
        && !(role == FolderRole::Ancestor && sticky)
        && !group_is_mine_alone(meta.gid())
    {
        return Some(Exposure::Group { mode });
    }
    None
}

/// No owners or mode bits to check.
#[cfg(not(unix))]
pub fn folder_exposure(_meta: &std::fs::Metadata, _role: FolderRole) -> Option<Exposure> {
    None
}

/// Whether `gid` is this user's private group: the effective group, named
/// as the user is, listing no one else. A shared primary group (`users`)
/// is not.
#[cfg(unix)]
fn group_is_mine_alone(gid: u32) -> bool {
    // SAFETY: getegid and geteuid have no preconditions and cannot fail.
    let (egid, euid) = unsafe { (libc::getegid(), libc::geteuid()) };
    if gid != egid {
        return false;
    }
    let (Some(user), Some((group, members))) = (user_name(euid), group_entry(gid)) else {
        return false;
    };
    group == user && members.iter().all(|m| *m == user)
}

/// Run a `getpwuid_r`-style lookup with a buffer that grows while the
/// call says it is too small (`ERANGE`), up to 1 MiB; `read` gets the
/// buffer when the call returned 0 and found an entry.
#[cfg(unix)]
fn lookup<T>(
    mut call: impl FnMut(&mut [libc::c_char]) -> (libc::c_int, bool),
    mut read: impl FnMut() -> Option<T>,
) -> Option<T> {
    let mut buf = vec![0 as libc::c_char; 1024];
    loop {
        match call(&mut buf) {
            (0, true) => return read(),
            (libc::ERANGE, _) if buf.len() < 1 << 20 => buf.resize(buf.len() * 2, 0),
            _ => return None,
        }
    }
}

#[cfg(unix)]
fn user_name(uid: u32) -> Option<Vec<u8>> {
    // SAFETY: all-zero is a valid passwd to be filled in.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let pwd_at: *mut libc::passwd = &mut pwd;
    lookup(
        |buf| {
            // SAFETY: every pointer is to a live local or `buf`, of the
            // stated size.
            let rc =
                unsafe { libc::getpwuid_r(uid, pwd_at, buf.as_mut_ptr(), buf.len(), &mut found) };
            (rc, !found.is_null())
        },
        // SAFETY: the lookup succeeded, so pw_name is null or a
        // NUL-terminated string in the buffer, which is still alive.
        || unsafe { c_bytes((*pwd_at).pw_name) },
    )
}

/// A group's name and its listed members.
#[cfg(unix)]
fn group_entry(gid: u32) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    // SAFETY: all-zero is a valid group to be filled in.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    let grp_at: *mut libc::group = &mut grp;
    lookup(
        |buf| {
            // SAFETY: as in `user_name`.
            let rc =
                unsafe { libc::getgrgid_r(gid, grp_at, buf.as_mut_ptr(), buf.len(), &mut found) };
            (rc, !found.is_null())
        },
        || {
            // SAFETY: the lookup succeeded: gr_name is a NUL-terminated
            // string and gr_mem a NULL-terminated array of them, all in
            // the buffer, which is still alive.
            unsafe {
                let name = c_bytes((*grp_at).gr_name)?;
                let mut members = Vec::new();
                let mut at = (*grp_at).gr_mem;
                while !at.is_null() && !(*at).is_null() {
                    members.push(c_bytes(*at)?);
                    at = at.add(1);
                }
                Some((name, members))
            }
        },
    )
}

/// A C string's bytes; `None` for a null pointer.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
#[cfg(unix)]
unsafe fn c_bytes(p: *const libc::c_char) -> Option<Vec<u8>> {
    // SAFETY: the caller's promise.
    (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes().to_vec())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn exposure(mode: u32, role: FolderRole) -> Option<Exposure> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        folder_exposure(&std::fs::metadata(dir.path()).unwrap(), role)
    }

    #[test]
    fn only_a_folder_no_one_else_may_write_is_unexposed() {
        for role in [FolderRole::Holder, FolderRole::Ancestor] {
            assert_eq!(exposure(0o755, role), None);
            assert_eq!(exposure(0o700, role), None);
            assert_eq!(
                exposure(0o777, role),
                Some(Exposure::Others { mode: 0o777 })
            );
        }
        // A sticky folder others may write keeps them to their own
        // entries: fine on the way, not as the holder.
        assert_eq!(exposure(0o1777, FolderRole::Ancestor), None);
        assert_eq!(
            exposure(0o1777, FolderRole::Holder),
            Some(Exposure::Others { mode: 0o1777 })
        );
    }

    /// Group write is fine only when the group is this user's alone; the
    /// temp folder's group is the process's, so the answer follows what
    /// the group database says about it.
    #[test]
    fn group_write_depends_on_whose_group_it_is() {
        // SAFETY: no preconditions.
        let gid = unsafe { libc::getegid() };
        let alone = group_is_mine_alone(gid);
        let got = exposure(0o775, FolderRole::Holder);
        if alone {
            assert_eq!(got, None);
        } else {
            assert_eq!(got, Some(Exposure::Group { mode: 0o775 }));
        }
        // A group that is not the effective one never is.
        assert!(!group_is_mine_alone(gid.wrapping_add(4242)));
    }
}
