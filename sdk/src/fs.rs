//! Paths inside the project, for tools granted the project directory.
//!
//! The sandbox already refuses anything outside the preopened project
//! (including symlinks that point out of it); this check comes first so the
//! model gets a clear message instead of a bare "not permitted".

use crate::Error;
use crate::kinds::tool::CallContext;

/// Where the host mounts the project for tools (the usual `project_dir`).
pub const PROJECT_ROOT: &str = "/project";

/// The guest path of `rel` (relative to the project root, or absolute
/// under it), normalized; refuses paths that leave the project.
pub fn project_path(call: &CallContext, rel: &str) -> Result<String, Error> {
    let root = call.project_dir.as_deref().ok_or_else(|| {
        Error::tool(
            "forbidden",
            "this tool has no access to the project directory",
        )
    })?;
    let parts = normalize(root, rel)?;
    Ok(if parts.is_empty() {
        root.to_string()
    } else {
        format!("{root}/{}", parts.join("/"))
    })
}

/// The approval key of a path argument: the path relative to the project
/// root with `.`, `..` and symbolic links resolved (`src/../.git/x` is
/// `.git/x`; with `src/cfg -> ../.stud`, `src/cfg/settings.json` is
/// `.stud/settings.json`; `./a` is `a`; the root is `.`), so an allowlist
/// pattern like `edit:src/*` matches what is really touched rather than how
/// the model spelled it. Paths that leave the project, directly or through
/// a link, are refused here already.
pub fn approval_path(rel: &str) -> Result<String, Error> {
    resolved_path(rel)
}

/// `rel` relative to the project root with `.`, `..` and symbolic links
/// inside the project resolved; what guards should match (a link
/// `notes.txt -> .env` is `.env`). Needs the project directory grant.
pub fn resolved_path(rel: &str) -> Result<String, Error> {
    let inner = normalize(PROJECT_ROOT, rel).map(|_| strip_root(PROJECT_ROOT, rel))?;
    let parts = resolve_links(std::path::Path::new(PROJECT_ROOT), inner, rel)?;
    Ok(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// Most links followed while resolving one path (as Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// `rel` with the project root prefix (if any) removed.
fn strip_root<'a>(root: &str, rel: &'a str) -> &'a str {
    match rel.strip_prefix(root) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => rel,
    }
}

/// Walk `rel` under `root` one component at a time, following symbolic
/// links the way the file system will (a link's target replaces it,
/// relative to its folder). Missing components are kept as written: a new
/// file's path is what it will be. Refuses anything that leaves `root`:
/// `..` past it, or a link to an absolute path (the sandbox refuses those
/// too, and inside it their meaning is the host's, not the project's).
fn resolve_links(root: &std::path::Path, rel: &str, shown: &str) -> Result<Vec<String>, Error> {
    let leaves = |how: &str| {
        Error::tool(
            "forbidden",
            format!(
                "`{shown}` leads outside the project directory{how}; only files inside it can be used"
            ),
        )
    };
    let mut pending: std::collections::VecDeque<String> =
        rel.split('/').map(str::to_string).collect();
    let mut resolved: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                if resolved.pop().is_none() {
                    return Err(leaves(if links > 0 {
                        " (through a symbolic link)"
                    } else {
                        ""
                    }));
                }
                continue;
            }
            _ => {}
        }
        let mut at = root.to_path_buf();
        at.extend(resolved.iter());
        at.push(&part);
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            resolved.push(part);
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Error::invalid_input(format!(
                "`{shown}` goes through more than {MAX_LINKS} symbolic links"
            )));
        }
        let target = std::fs::read_link(&at).map_err(|e| Error::io(shown, e))?;
        let target = target.to_str().ok_or_else(|| {
            Error::invalid_input(format!(
                "`{shown}` goes through a link whose target is not UTF-8"
            ))
        })?;
        if target.starts_with('/') {
            return Err(leaves(" (through a symbolic link to an absolute path)"));
        }
        for (i, t) in target.split('/').enumerate() {
            pending.insert(i, t.to_string());
        }
    }
    Ok(resolved)
}

/// The components of `rel` below `root` after `.` and `..` are resolved.
fn normalize<'a>(root: &str, rel: &'a str) -> Result<Vec<&'a str>, Error> {
    let inner = match rel.strip_prefix(root) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ if rel.starts_with('/') => {
            return Err(Error::tool(
                "forbidden",
                format!(
                    "`{rel}` is outside the project directory; use a path relative to the project root"
                ),
            ));
        }
        _ => rel,
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in inner.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Error::tool(
                        "forbidden",
                        format!(
                            "`{rel}` leaves the project directory; only files inside it can be used"
                        ),
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts)
}

/// Read a regular file of the project as text. A pipe or device is refused
/// before it is opened: opening a FIFO waits for a writer, and a tool call
/// must not hang on one.
/// Files larger than [`MAX_TEXT_BYTES`] and binary files (a NUL byte or
/// invalid UTF-8) are refused with a message instead of filling the
/// tool's capped memory or being mangled by a text edit.
pub fn read_text(path: &str, rel: &str) -> Result<String, Error> {
    let meta = regular_file(path, rel)?.ok_or_else(|| {
        Error::io(
            rel,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        )
    })?;
    if meta.len() > MAX_TEXT_BYTES {
        return Err(Error::invalid_input(format!(
            "`{rel}` is {} bytes, over the {MAX_TEXT_BYTES}-byte limit for editing as text; change it with a command instead",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(rel, e))?;
    if bytes.contains(&0) {
        return Err(Error::invalid_input(format!(
            "`{rel}` looks binary (it contains NUL bytes); only text files can be edited"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::invalid_input(format!(
            "`{rel}` is not UTF-8 text (invalid byte at offset {}); only text files can be edited",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The largest file [`read_text`] loads.
pub const MAX_TEXT_BYTES: u64 = 16 * 1024 * 1024;

/// Refuse anything but a regular file (or a missing one: `Ok(None)`)
/// before it is opened. Opening a FIFO waits for the other end and a
/// device may never answer: a repository can plant either under a name a
/// tool or context provider reads (`AGENTS.md`), and a call must not hang.
pub fn regular_file(path: &str, rel: &str) -> Result<Option<std::fs::Metadata>, Error> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(Some(meta)),
        Ok(_) => Err(Error::invalid_input(format!(
            "`{rel}` is not a regular file (a directory, pipe or device); only files are read or written"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(rel, e)),
    }
}

/// A regular file's text, `None` when it does not exist; pipes, devices
/// and files over [`MAX_TEXT_BYTES`] are refused.
pub fn read_to_string(path: &str, rel: &str) -> Result<Option<String>, Error> {
    let Some(meta) = regular_file(path, rel)? else {
        return Ok(None);
    };
    if meta.len() > MAX_TEXT_BYTES {
        return Err(Error::invalid_input(format!(
            "`{rel}` is {} bytes, over the {MAX_TEXT_BYTES}-byte limit",
            meta.len()
        )));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(rel, e)),
    }
}

/// Write `bytes` to a file, refusing to open a pipe or device that is
/// there already (it could block the call forever).
pub fn write_file(path: &str, rel: &str, bytes: &[u8]) -> Result<(), Error> {
    regular_file(path, rel)?;
    std::fs::write(path, bytes).map_err(|e| Error::io(rel, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> CallContext {
        CallContext {
            call_id: "c".into(),
            project_dir: Some("/project".into()),
        }
    }

    #[test]
    fn stays_inside() {
        assert_eq!(project_path(&ctx(), "a/b.txt").unwrap(), "/project/a/b.txt");
        assert_eq!(project_path(&ctx(), "./a/../b").unwrap(), "/project/b");
        assert_eq!(project_path(&ctx(), "/project/x").unwrap(), "/project/x");
        assert_eq!(project_path(&ctx(), ".").unwrap(), "/project");
        assert!(project_path(&ctx(), "../outside").is_err());
        assert!(project_path(&ctx(), "a/../../x").is_err());
        assert!(project_path(&ctx(), "/etc/passwd").is_err());
        assert!(project_path(&ctx(), "/projectile").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn links_resolve_inside_the_root_and_never_out() {
        use std::os::unix::fs::symlink;
        let dir = std::env::temp_dir().join(format!("stud-sdk-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join(".stud")).unwrap();
        symlink("../.stud", dir.join("src/cfg")).unwrap();
        symlink(".env", dir.join("notes.txt")).unwrap();
        symlink("../..", dir.join("src/up")).unwrap();
        symlink("/etc", dir.join("abs")).unwrap();
        symlink("loop", dir.join("loop")).unwrap();
        let r = |rel: &str| resolve_links(&dir, rel, rel).map(|p| p.join("/"));
        assert_eq!(r("src/cfg/settings.json").unwrap(), ".stud/settings.json");
        assert_eq!(r("notes.txt").unwrap(), ".env");
        assert_eq!(r("src/cfg/../x").unwrap(), "x");
        assert_eq!(r("new/file.txt").unwrap(), "new/file.txt");
        assert!(r("src/up/x").is_err());
        assert!(r("abs/passwd").is_err());
        assert!(r("loop").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn approval_keys_are_what_is_touched() {
        assert_eq!(
            approval_path("src/../.git/hooks/x").unwrap(),
            ".git/hooks/x"
        );
        assert_eq!(approval_path("./a//b").unwrap(), "a/b");
        assert_eq!(approval_path("/project/a").unwrap(), "a");
        assert_eq!(approval_path(".").unwrap(), ".");
        assert!(approval_path("../x").is_err());
        assert!(approval_path("/etc/passwd").is_err());
    }
}
