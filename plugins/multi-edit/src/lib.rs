//! `multi-edit`: several `edit`s to one file, applied in order on the
//! result of the previous one; if any fails, the file is not touched.

use stud_sdk::prelude::*;
use stud_sdk::text::replace_once;

#[derive(Default)]
struct MultiEdit;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Change {
    old_string: String,
    new_string: String,
}

impl Tool for MultiEdit {
    fn spec(&self) -> ToolSpec {
        let edit = json!({
            "type": "object",
            "properties": {"old_string": {"type": "string"}, "new_string": {"type": "string"}},
            "required": ["old_string", "new_string"],
            "additionalProperties": false
        });
        ToolSpec::new(
            "multi-edit",
            "Apply several exact replacements to one file, in order, all or nothing",
        )
        .param(
            "path",
            "string",
            "File path relative to the project root",
            true,
        )
        .param_schema(
            "edits",
            json!({"type": "array", "minItems": 1, "items": edit}),
            true,
        )
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        stud_sdk::fs::approval_path(args.str("path")?)
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let rel = args.str("path")?.to_string();
        let edits: Vec<Change> =
            serde_json::from_value(args.get("edits").cloned().unwrap_or_default())
                .map_err(|e| Error::invalid_input(format!("edits: {e}")))?;
        let path = stud_sdk::fs::project_path(call, &rel)?;
        let mut content = stud_sdk::fs::read_text(&path, &rel)?;
        for (i, change) in edits.iter().enumerate() {
            content =
                replace_once(&content, &change.old_string, &change.new_string).map_err(|e| {
                    Error::tool(
                        e.code(),
                        format!(
                            "`{rel}`, edit {}: {} (no edit was applied)",
                            i + 1,
                            e.message()
                        ),
                    )
                })?;
        }
        stud_sdk::fs::write_file(&path, &rel, content.as_bytes())?;
        Ok(
            ToolOutput::text(format!("Applied {} edits to `{rel}`", edits.len()))
                .with_details(json!({"path": rel, "edits": edits.len()})),
        )
    }
}

stud_sdk::export_tool!(MultiEdit);
