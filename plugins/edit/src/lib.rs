//! `edit`: replace exactly one occurrence of `old_string` with `new_string`.
//! No match or several matches change nothing and say where.

use stud_sdk::prelude::*;
use stud_sdk::text::replace_once;

#[derive(Default)]
struct Edit;

impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "edit",
            "Replace one exact occurrence of old_string with new_string in a file",
        )
        .param(
            "path",
            "string",
            "File path relative to the project root",
            true,
        )
        .param(
            "old_string",
            "string",
            "Exact text to replace; must occur exactly once",
            true,
        )
        .param("new_string", "string", "Replacement text", true)
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        stud_sdk::fs::approval_path(args.str("path")?)
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let rel = args.str("path")?;
        let path = stud_sdk::fs::project_path(call, rel)?;
        let content = stud_sdk::fs::read_text(&path, rel)?;
        let updated = replace_once(&content, args.str("old_string")?, args.str("new_string")?)
            .map_err(|e| Error::tool(e.code(), format!("`{rel}`: {}", e.message())))?;
        stud_sdk::fs::write_file(&path, rel, updated.as_bytes())?;
        Ok(ToolOutput::text(format!("Edited `{rel}`")).with_details(json!({"path": rel})))
    }
}

stud_sdk::export_tool!(Edit);
