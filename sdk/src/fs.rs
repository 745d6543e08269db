//! Paths inside the project, for tools granted the project directory.
//!
//! The sandbox already refuses anything outside the preopened project
//! (including symlinks that point out of it); this check comes first so the
//! model gets a clear message instead of a bare "not permitted".

use crate::Error;
use crate::kinds::tool::CallContext;

/// The guest path of `rel` (relative to the project root, or absolute
/// under it), normalized; refuses paths that leave the project.
pub fn project_path(call: &CallContext, rel: &str) -> Result<String, Error> {
    let root = call.project_dir.as_deref().ok_or_else(|| {
        Error::tool(
            "forbidden",
            "this tool has no access to the project directory",
        )
    })?;
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
    Ok(if parts.is_empty() {
        root.to_string()
    } else {
        format!("{root}/{}", parts.join("/"))
    })
}

/// Read a regular file of the project as text. A pipe or device is refused
/// before it is opened: opening a FIFO waits for a writer, and a tool call
/// must not hang on one.
pub fn read_text(path: &str, rel: &str) -> Result<String, Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(rel, e))?;
    if !meta.is_file() {
        return Err(Error::invalid_input(format!(
            "`{rel}` is not a regular file (a directory, pipe or device); tools read only files"
        )));
    }
    std::fs::read_to_string(path).map_err(|e| Error::io(rel, e))
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
}
