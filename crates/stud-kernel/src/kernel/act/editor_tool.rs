//! The bundled `read`, `write` and `edit` served through the editor's file
//! system (see [`crate::kernel::editor_files`]). The component still owns
//! the tool: its spec, its argument schema and its approval key (which
//! resolves links and refuses paths that leave the project) are used as
//! they are; only the file I/O moves to the editor, so what the model
//! reads is the buffer the user sees.

use serde_json::{Value, json};

use super::run_tool::Ran;
use crate::kernel::editor_files::EditorRoute;
use crate::runtime::Extension;
use crate::runtime::domain::ResultPart;
use crate::runtime::domain::ToolOutput;

/// A file tool the editor can serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EditorOp {
    Read,
    Write,
    Edit,
}

/// The `read` tool's page size and the `write` tool's limit, as theirs.
const DEFAULT_LIMIT: usize = 2000;
const MAX_WRITE: usize = 4 * 1024 * 1024;
/// The most the `read` tool shows of a file without offset or limit.
const MAX_READ: usize = 256 * 1024;

impl EditorOp {
    /// Only stud's own components are routed: a user's `read` does what
    /// its author wrote.
    pub(crate) fn of(ext: &Extension) -> Option<Self> {
        let op = match ext.id().as_str() {
            "read" => EditorOp::Read,
            "write" => EditorOp::Write,
            "edit" => EditorOp::Edit,
            _ => return None,
        };
        // That very component, not another bundled one under its id.
        let digest = ext.digest.hex();
        crate::bundled::BUNDLED
            .iter()
            .any(|b| b.dir == ext.id().as_str() && b.sha256 == digest)
            .then_some(op)
    }
}

fn failed(code: &str, message: String) -> Ran {
    Ran::Failed {
        class: "ToolTerminal".into(),
        code: code.into(),
        detail: format!("through the editor: {message}"),
        message,
    }
}

fn ok(text: String, details: Value) -> Ran {
    Ran::Ok(ToolOutput {
        content: vec![ResultPart::Text(text)],
        details: Some(details.to_string()),
    })
}

/// Run `op` with `arguments` (already validated against the tool's
/// schema) through `route`.
pub(crate) async fn run(
    route: &EditorRoute,
    ext: &Extension,
    op: EditorOp,
    arguments: &str,
) -> Ran {
    let key = match ext.tool_approval_key(arguments).await {
        Ok(k) => k,
        Err(crate::runtime::CallError::Guest { error, .. }) => {
            return failed(&error.code, error.message);
        }
        Err(e) => return failed("tool-failed", e.to_string()),
    };
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let text = |name: &str| args[name].as_str().unwrap_or_default().to_string();
    let rel = text("path");
    let path = route.path_of(&key);
    match op {
        EditorOp::Read => match route.files.read(path).await {
            Ok(content) => numbered(&rel, &content, &args),
            Err(e) => failed("editor-read-failed", format!("`{rel}`: {e}")),
        },
        EditorOp::Write => {
            let content = text("content");
            if content.len() > MAX_WRITE {
                return failed(
                    "invalid-input",
                    format!(
                        "content is {} bytes; the limit is {MAX_WRITE}",
                        content.len()
                    ),
                );
            }
            let bytes = content.len();
            match route.files.write(path, content).await {
                Ok(()) => ok(
                    format!("Wrote `{rel}` ({bytes} bytes) in the editor"),
                    json!({"path": rel, "bytes": bytes, "editor": true}),
                ),
                Err(e) => failed("editor-write-failed", format!("`{rel}`: {e}")),
            }
        }
        EditorOp::Edit => {
            let current = match route.files.read(path.clone()).await {
                Ok(c) => c,
                Err(e) => return failed("editor-read-failed", format!("`{rel}`: {e}")),
            };
            let updated = match stud_protocol::text::replace_once(
                &current,
                &text("old_string"),
                &text("new_string"),
            ) {
                Ok(u) => u,
                Err(e) => return failed(e.code(), format!("`{rel}`: {e}")),
            };
            match route.files.write(path, updated).await {
                Ok(()) => ok(
                    format!("Edited `{rel}`"),
                    json!({"path": rel, "editor": true}),
                ),
                Err(e) => failed("editor-write-failed", format!("`{rel}`: {e}")),
            }
        }
    }
}

/// The editor's text with line numbers, paged as the `read` tool pages.
fn numbered(rel: &str, content: &str, args: &Value) -> Ran {
    if content.chars().take(8000).any(|c| c == '\0') {
        return failed(
            "invalid-input",
            format!("`{rel}` looks binary; read only text files"),
        );
    }
    let paged = args.get("offset").is_some() || args.get("limit").is_some();
    if content.len() > MAX_READ && !paged {
        return failed(
            "invalid-input",
            format!(
                "`{rel}` is {} bytes (over {MAX_READ}); read it in parts with offset and limit",
                content.len()
            ),
        );
    }
    let offset = args["offset"].as_u64().unwrap_or(1).max(1) as usize;
    let limit = args["limit"]
        .as_u64()
        .map(|l| l as usize)
        .unwrap_or(DEFAULT_LIMIT);
    let lines: Vec<&str> = content.lines().collect();
    let total = lines.len();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate().skip(offset - 1).take(limit) {
        out.push_str(&format!("{:>6}\t{}\n", i + 1, line.trim_end_matches('\r')));
    }
    let shown_end = (offset - 1 + limit).min(total);
    out.push_str(
        &stud_protocol::text::more_lines(total as u64, shown_end as u64).unwrap_or_default(),
    );
    ok(
        out,
        json!({"path": rel, "lines": total, "bytes": content.len(), "editor": true}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: Ran) -> String {
        match r {
            Ran::Ok(out) => match &out.content[0] {
                ResultPart::Text(t) => t.clone(),
                _ => panic!("not text"),
            },
            _ => panic!("failed"),
        }
    }

    #[test]
    fn pages_like_the_read_tool() {
        let t = text(numbered(
            "a",
            "one\ntwo\r\nthree\n",
            &json!({"offset": 2, "limit": 1}),
        ));
        assert_eq!(
            t,
            "     2\ttwo\n[1 more lines; call read with offset 3 to continue]\n"
        );
    }

    #[test]
    fn a_large_buffer_is_read_in_parts() {
        let big = "x\n".repeat(MAX_READ);
        assert!(matches!(
            numbered("a", &big, &json!({})),
            Ran::Failed { .. }
        ));
        let t = text(numbered("a", &big, &json!({"limit": 1})));
        assert!(t.starts_with("     1\tx\n"), "{t}");
    }

    #[test]
    fn refuses_binary_text() {
        assert!(matches!(
            numbered("a", "x\0y", &json!({})),
            Ran::Failed { .. }
        ));
    }
}
