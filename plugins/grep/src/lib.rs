//! `grep`: lines matching a regular expression in project files, skipping
//! what `.gitignore`, `.ignore` and hidden-file rules exclude and binary
//! files. Output is `path:line:text`, like ripgrep.

use std::io::{BufRead, BufReader};

use ignore::WalkBuilder;
use regex::RegexBuilder;
use stud_sdk::prelude::*;

const MAX_MATCHES: usize = 500;
/// Longest line shown.
const MAX_LINE: usize = 400;

#[derive(Default)]
struct Grep;

impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Search project files for lines matching a regular expression (respects .gitignore)",
        )
        .param(
            "pattern",
            "string",
            "Regular expression (Rust regex syntax)",
            true,
        )
        .param(
            "path",
            "string",
            "File or folder to search (default the project root)",
            false,
        )
        .param(
            "glob",
            "string",
            "Only files whose name matches this glob, e.g. `*.rs`",
            false,
        )
        .param("ignore_case", "boolean", "Case-insensitive match", false)
        .read_only()
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        Ok(args.str("pattern")?.to_string())
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let pattern = args.str("pattern")?;
        let re = RegexBuilder::new(pattern)
            .case_insensitive(args.opt_bool("ignore_case").unwrap_or(false))
            .build()
            .map_err(|e| Error::invalid_input(format!("`{pattern}` is not a valid regex: {e}")))?;
        let root = stud_sdk::fs::project_path(call, ".")?;
        let base = stud_sdk::fs::project_path(call, args.opt_str("path").unwrap_or("."))?;
        let mut walk = WalkBuilder::new(&base);
        walk.require_git(false);
        if let Some(g) = args.opt_str("glob") {
            let mut overrides = ignore::overrides::OverrideBuilder::new(&base);
            overrides
                .add(g)
                .map_err(|e| Error::invalid_input(format!("glob `{g}`: {e}")))?;
            walk.overrides(
                overrides
                    .build()
                    .map_err(|e| Error::invalid_input(format!("glob `{g}`: {e}")))?,
            );
        }
        let mut out = Vec::new();
        let mut total = 0usize;
        let mut files = 0usize;
        for entry in walk.build().flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(file) = std::fs::File::open(entry.path()) else {
                continue;
            };
            let mut reader = BufReader::new(file);
            if looks_binary(&mut reader) {
                continue;
            }
            files += 1;
            let full = entry.path().to_string_lossy();
            let rel = full
                .strip_prefix(&format!("{root}/"))
                .unwrap_or(&full)
                .to_string();
            for (n, line) in reader.lines().enumerate() {
                let Ok(line) = line else { break };
                if re.is_match(&line) {
                    total += 1;
                    if out.len() < MAX_MATCHES {
                        let shown: String = line.chars().take(MAX_LINE).collect();
                        out.push(format!("{rel}:{}:{shown}", n + 1));
                    }
                }
            }
        }
        let mut text = out.join("\n");
        if total > out.len() {
            text.push_str(&format!(
                "\n[{} more matches; narrow the pattern, the path or the glob]",
                total - out.len()
            ));
        }
        if total == 0 {
            text = format!("no matches for `{pattern}` in {files} files");
        }
        Ok(ToolOutput::text(text)
            .with_details(json!({"pattern": pattern, "matches": total, "files": files})))
    }
}

/// A NUL byte in the first 8 KB means binary, as grep tools assume.
fn looks_binary(reader: &mut BufReader<std::fs::File>) -> bool {
    match reader.fill_buf() {
        Ok(buf) => buf.iter().take(8192).any(|b| *b == 0),
        Err(_) => true,
    }
}

stud_sdk::export_tool!(Grep);
