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
/// as the user is, listing no one else, and the primary group of no other
/// account. A shared primary group (`users`) is not. An account whose
/// primary group it is need not be listed among its members, so every
/// account is read; where the account or group database cannot be read
/// whole (a directory service: `sss`, `ldap`, `nis`, ...) the group
/// counts as shared.
#[cfg(unix)]
fn group_is_mine_alone(gid: u32) -> bool {
    // SAFETY: getegid and geteuid have no preconditions and cannot fail.
    let (egid, euid) = unsafe { (libc::getegid(), libc::geteuid()) };
    let nsswitch = || std::fs::read_to_string("/etc/nsswitch.conf").unwrap_or_default();
    private_group(
        Asked { gid, egid, euid },
        || user_name(euid),
        || group_entry(gid),
        nsswitch,
        accounts,
    )
}

/// The group asked about, and who is asking.
#[cfg(unix)]
#[derive(Clone, Copy)]
struct Asked {
    gid: u32,
    egid: u32,
    euid: u32,
}

/// [`group_is_mine_alone`] over its lookups, each made only when the
/// answer still depends on it.
#[cfg(unix)]
fn private_group(
    asked: Asked,
    user: impl FnOnce() -> Option<Vec<u8>>,
    group: impl FnOnce() -> Option<(Vec<u8>, Vec<Vec<u8>>)>,
    nsswitch: impl FnOnce() -> String,
    accounts: impl FnOnce() -> Option<Vec<(u32, u32)>>,
) -> bool {
    if asked.gid != asked.egid {
        return false;
    }
    let (Some(user), Some((name, members))) = (user(), group()) else {
        return false;
    };
    if name != user || members.iter().any(|m| *m != user) {
        return false;
    }
    let nsswitch = nsswitch();
    if !read_whole(&nsswitch, "passwd") || !read_whole(&nsswitch, "group") {
        return false;
    }
    accounts().is_some_and(|all| primary_group_is_only(&all, asked.euid, asked.gid))
}

/// Whether the line for `database` (`passwd`, `group`) in nsswitch.conf
/// names only sources that hold every entry they answer for, members
/// included: local files and systemd's records. A missing line or file is
/// not assumed to mean anything.
#[cfg(unix)]
fn read_whole(nsswitch: &str, database: &str) -> bool {
    let key = format!("{database}:");
    let Some(sources) = nsswitch.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or_default();
        line.trim_start()
            .strip_prefix(key.as_str())
            .map(|rest| rest.to_string())
    }) else {
        return false;
    };
    // `[NOTFOUND=return]`-style actions change when a lookup stops, not
    // which sources there are.
    let mut names = Vec::new();
    let mut in_action = false;
    for word in sources.split_whitespace() {
        if in_action || word.starts_with('[') {
            in_action = !word.ends_with(']');
        } else {
            names.push(word);
        }
    }
    !names.is_empty() && names.iter().all(|n| matches!(*n, "files" | "systemd"))
}

/// Whether no account but `me` has `gid` as its primary group.
#[cfg(unix)]
fn primary_group_is_only(accounts: &[(u32, u32)], me: u32, gid: u32) -> bool {
    accounts
        .iter()
        .all(|&(uid, primary)| primary != gid || uid == me)
}

/// Every account's uid and primary gid, from the account database.
/// `getpwent` walks one process-wide position, so walks are taken one at
/// a time.
#[cfg(unix)]
fn accounts() -> Option<Vec<(u32, u32)>> {
    static WALK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = WALK.lock().unwrap_or_else(|p| p.into_inner());
    let mut all = Vec::new();
    // SAFETY: setpwent/getpwent/endpwent are called under the lock above;
    // each entry is read before the next call overwrites it.
    let whole = unsafe {
        libc::setpwent();
        let whole = loop {
            clear_errno();
            let entry = libc::getpwent();
            if entry.is_null() {
                break walk_ended(std::io::Error::last_os_error().raw_os_error());
            }
            all.push(((*entry).pw_uid, (*entry).pw_gid));
        };
        libc::endpwent();
        whole
    };
    (whole && !all.is_empty()).then_some(all)
}

/// Whether `getpwent`'s null, with `errno` as it left it, is the end of
/// the accounts rather than a failed read (closed world: a walk cut short
/// by an error would look like every account, one short).
#[cfg(unix)]
fn walk_ended(errno: Option<i32>) -> bool {
    matches!(errno, Some(0) | Some(libc::ENOENT))
}

/// Set `errno` to 0, so an error `getpwent` reports can be told from the
/// end of the walk. Where there is no way to, the walk's end is taken as
/// an error unless `errno` happens to read 0 or ENOENT.
#[cfg(unix)]
fn clear_errno() {
    // SAFETY: the calling thread's errno location is always valid.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    unsafe {
        *libc::__errno_location() = 0;
    }
    // SAFETY: as above.
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    unsafe {
        *libc::__error() = 0;
    }
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

    /// Only local files and systemd's records are read whole; a directory
    /// service, `compat` (NIS entries in the files) or no line at all
    /// leaves accounts unseen.
    #[test]
    fn only_local_sources_are_read_whole() {
        for (conf, whole) in [
            ("passwd:         files systemd\ngroup: files\n", true),
            ("passwd: files\n", true),
            ("passwd: files [NOTFOUND=return] systemd\n", true),
            ("passwd: files [ NOTFOUND=return ] systemd\n", true),
            ("  passwd: files # systemd sss\n", true),
            ("passwd: files sss\n", false),
            ("passwd: files systemd ldap\n", false),
            ("passwd: compat\n", false),
            ("passwd: nis [NOTFOUND=return] files\n", false),
            ("# passwd: files\ngroup: files\n", false),
            ("passwd:\n", false),
            ("", false),
        ] {
            assert_eq!(read_whole(conf, "passwd"), whole, "{conf:?}");
        }
        let conf = "passwd: files systemd\ngroup: files sss\n";
        assert!(read_whole(conf, "passwd") && !read_whole(conf, "group"));
        // `passwdx:` is another database.
        assert!(!read_whole("passwdx: files\n", "passwd"));
    }

    /// Another account whose primary group it is, listed as a member or
    /// not, makes the group shared.
    #[test]
    fn another_account_with_the_group_as_its_primary_one_shares_it() {
        let me = 1000;
        assert!(primary_group_is_only(&[(0, 0), (1000, 1000)], me, 1000));
        assert!(!primary_group_is_only(
            &[(0, 0), (1000, 1000), (1001, 1000)],
            me,
            1000
        ));
        // Two entries for this user (files and a record) are still one.
        assert!(primary_group_is_only(
            &[(1000, 1000), (1000, 1000)],
            me,
            1000
        ));
    }

    /// The attack the account walk closes: another account whose primary
    /// group is this user's, not listed among the group's members, could
    /// write a group-writable folder; so could the accounts of a directory
    /// service the walk cannot read whole.
    #[test]
    fn a_group_is_private_only_when_every_account_was_seen() {
        let asked = Asked {
            gid: 1000,
            egid: 1000,
            euid: 1000,
        };
        let alice = || Some(b"alice".to_vec());
        let group = || Some((b"alice".to_vec(), vec![]));
        let local = || "passwd: files systemd\ngroup: files systemd\n".to_string();
        let alone = || Some(vec![(0, 0), (1000, 1000), (1001, 1001)]);
        assert!(private_group(asked, alice, group, local, alone));
        let hidden = || Some(vec![(0, 0), (1000, 1000), (1001, 1000)]);
        assert!(!private_group(asked, alice, group, local, hidden));
        let directory = || "passwd: files sss\ngroup: files sss\n".to_string();
        assert!(!private_group(asked, alice, group, directory, alone));
        let unread = || None;
        assert!(!private_group(asked, alice, group, local, unread));
        // What was refused before still is: a member listed, another
        // name, another group than the effective one.
        let shared = || Some((b"alice".to_vec(), vec![b"bob".to_vec()]));
        assert!(!private_group(asked, alice, shared, local, alone));
        let users = || Some((b"users".to_vec(), vec![]));
        assert!(!private_group(asked, alice, users, local, alone));
        let other = Asked { gid: 100, ..asked };
        assert!(!private_group(other, alice, group, local, alone));
    }

    /// Only a null with no error (or "no more entries") ends the walk as
    /// whole; a read error leaves the accounts unseen.
    #[test]
    fn a_walk_cut_short_by_an_error_is_not_whole() {
        assert!(walk_ended(Some(0)));
        assert!(walk_ended(Some(libc::ENOENT)));
        for errno in [libc::EIO, libc::EMFILE, libc::ENOMEM, libc::EAGAIN] {
            assert!(!walk_ended(Some(errno)), "{errno}");
        }
        assert!(!walk_ended(None));
    }

    /// The walk reads the real database: the effective user is in it.
    #[test]
    fn the_account_walk_finds_this_user() {
        // SAFETY: no preconditions.
        let me = unsafe { libc::geteuid() };
        let all = accounts().expect("at least one account");
        assert!(all.iter().any(|&(uid, _)| uid == me), "{all:?}");
    }
}
