//! `glob`: project files matching a glob (`src/**/*.rs`), skipping what
//! `.gitignore`, `.ignore` and hidden-file rules exclude (the `ignore`
//! crate, as ripgrep does). Paths are relative to the project root, sorted.

use globset::GlobBuilder;
use ignore::WalkBuilder;
use stud_sdk::prelude::*;

const MAX_RESULTS: usize = 1000;

#[derive(Default)]
struct Glob;

impl Tool for Glob {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "glob",
            "Find files in the project whose path matches a glob pattern (respects .gitignore)",
        )
        .param(
            "pattern",
            "string",
            "Glob such as `**/*.rs` or `src/*.toml`",
            true,
        )
        .param(
            "path",
            "string",
            "Folder to search in (default the project root)",
            false,
        )
        .read_only()
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        Ok(args.str("pattern")?.to_string())
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let pattern = args.str("pattern")?;
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::invalid_input(format!("`{pattern}` is not a valid glob: {e}")))?
            .compile_matcher();
        let root = stud_sdk::fs::project_path(call, ".")?;
        let base = stud_sdk::fs::project_path(call, args.opt_str("path").unwrap_or("."))?;
        let mut found = Vec::new();
        for entry in WalkBuilder::new(&base).require_git(false).build().flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let full = entry.path().to_string_lossy();
            let rel = full
                .strip_prefix(&format!("{root}/"))
                .unwrap_or(&full)
                .to_string();
            if matcher.is_match(&rel) {
                found.push(rel);
            }
        }
        found.sort();
        let total = found.len();
        let mut text = found
            .iter()
            .take(MAX_RESULTS)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        if total > MAX_RESULTS {
            text.push_str(&format!(
                "\n[{} more files; narrow the pattern or the path]",
                total - MAX_RESULTS
            ));
        }
        if total == 0 {
            text = format!("no files match `{pattern}`");
        }
        Ok(ToolOutput::text(text).with_details(json!({"pattern": pattern, "matches": total})))
    }
}

stud_sdk::export_tool!(Glob);
