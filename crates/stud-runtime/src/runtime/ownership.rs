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
