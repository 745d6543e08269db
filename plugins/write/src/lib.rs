//! `write`: create or overwrite a project file (parent folders included).

use stud_sdk::prelude::*;

/// Largest content accepted in one call.
const MAX_BYTES: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct Write;

impl Tool for Write {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "write",
            "Create or overwrite a file in the project with the given content",
        )
        .param(
            "path",
            "string",
            "File path relative to the project root",
            true,
        )
        .param("content", "string", "The complete new content", true)
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        stud_sdk::fs::approval_path(args.str("path")?)
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let rel = args.str("path")?;
        let content = args.str("content")?;
        if content.len() > MAX_BYTES {
            return Err(Error::invalid_input(format!(
                "content is {} bytes; the limit is {MAX_BYTES}",
                content.len()
            )));
        }
        let path = stud_sdk::fs::project_path(call, rel)?;
        if let Some((parent, _)) = path.rsplit_once('/') {
            std::fs::create_dir_all(parent).map_err(|e| {
                // The sandbox will not follow a symlink out of the project,
                // so the folder "exists" but cannot be entered.
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::io(
                        rel,
                        std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string()),
                    )
                } else {
                    Error::io(rel, e)
                }
            })?;
        }
        let existed = std::fs::metadata(&path).is_ok();
        stud_sdk::fs::write_file(&path, rel, content.as_bytes())?;
        let verb = if existed { "Overwrote" } else { "Created" };
        Ok(
            ToolOutput::text(format!("{verb} `{rel}` ({} bytes)", content.len()))
                .with_details(json!({"path": rel, "bytes": content.len(), "created": !existed})),
        )
    }
}

stud_sdk::export_tool!(Write);
