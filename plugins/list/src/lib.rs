//! `list`: the entries of a project directory, directories marked with `/`.

use stud_sdk::prelude::*;

const MAX_ENTRIES: usize = 1000;

#[derive(Default)]
struct List;

impl Tool for List {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list",
            "List the files and directories in a project directory",
        )
        .param(
            "path",
            "string",
            "Directory relative to the project root (default `.`)",
            false,
        )
        .read_only()
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        stud_sdk::fs::approval_path(args.opt_str("path").unwrap_or("."))
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let rel = args.opt_str("path").unwrap_or(".");
        let dir = stud_sdk::fs::project_path(call, rel)?;
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(rel, e))? {
            let entry = entry?;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_dir() {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        let total = names.len();
        let mut out = names
            .iter()
            .take(MAX_ENTRIES)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        if total > MAX_ENTRIES {
            out.push_str(&format!(
                "\n[{} more entries not shown]",
                total - MAX_ENTRIES
            ));
        }
        if total == 0 {
            out = "(empty directory)".into();
        }
        Ok(ToolOutput::text(out).with_details(json!({"path": rel, "entries": total})))
    }
}

stud_sdk::export_tool!(List);
