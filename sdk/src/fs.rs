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
/// root, normalized (`src/../.git/x` is `.git/x`, `./a` is `a`, the root is
/// `.`), so an allowlist pattern like `edit:src/*` matches what is really
/// touched rather than how the model spelled it. Paths that leave the
/// project are refused here already.
pub fn approval_path(rel: &str) -> Result<String, Error> {
    let parts = normalize(PROJECT_ROOT, rel)?;
    Ok(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
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
    let meta = std::fs::metadata(path).map_err(|e| Error::io(rel, e))?;
    if !meta.is_file() {
        return Err(Error::invalid_input(format!(
            "`{rel}` is not a regular file (a directory, pipe or device); tools read only files"
        )));
    }
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
