//! `grep`: lines matching a regular expression in project files, skipping
//! what `.gitignore`, `.ignore` and hidden-file rules exclude and binary
//! files. Output is `path:line:text`, like ripgrep. The host walks and reads
//! the files (the `files` import, in batches, on its own threads); the
//! search itself is ripgrep's (`grep-searcher`, `grep-regex`) on each file
//! in memory.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use stud_sdk::files::{self, Content, WalkOptions};
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
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.opt_bool("ignore_case").unwrap_or(false))
            // A match never spans lines, as with grep and ripgrep.
            .line_terminator(Some(b'\n'))
            .build(pattern)
            .map_err(|e| Error::invalid_input(format!("`{pattern}` is not a valid regex: {e}")))?;
        let root = stud_sdk::fs::project_path(call, ".")?;
        let base = stud_sdk::fs::project_path(call, args.opt_str("path").unwrap_or("."))?;
        let options = WalkOptions {
            globs: args
                .opt_str("glob")
                .map(|g| vec![g.to_string()])
                .unwrap_or_default(),
            ..WalkOptions::default()
        };
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::none())
            .build();
        let mut found = Found::default();
        let prefix = format!("{root}/");
        let (mut searched, mut too_large) = (0usize, 0usize);
        for file in files::walk(&base, &options)? {
            let bytes = match file.content {
                Content::Bytes(bytes) => bytes,
                Content::TooLarge(_) => {
                    too_large += 1;
                    continue;
                }
                Content::Unreadable(_) => continue,
            };
            if looks_binary(&bytes) {
                continue;
            }
            searched += 1;
            let rel = file
                .path
                .strip_prefix(&prefix)
                .unwrap_or(&file.path)
                .to_string();
            let sink = Lossy(|line_number, line: &str| {
                found.add(&rel, line_number, line);
                Ok(true)
            });
            // A slice in memory: the search cannot fail but for the sink.
            let _ = searcher.search_slice(&matcher, &bytes, sink);
        }
        let total = found.total;
        let mut text = found.lines.join("\n");
        if total > found.lines.len() {
            text.push_str(&format!(
                "\n[{} more matches; narrow the pattern, the path or the glob]",
                total - found.lines.len()
            ));
        }
        if total == 0 {
            text = format!("no matches for `{pattern}` in {searched} files");
        }
        if too_large > 0 {
            text.push_str(&format!(
                "\n[{too_large} files over {} MiB not searched]",
                files::MAX_FILE_BYTES >> 20
            ));
        }
        Ok(ToolOutput::text(text)
            .with_details(json!({"pattern": pattern, "matches": total, "files": searched})))
    }
}

/// The lines shown (up to [`MAX_MATCHES`]) and how many matched in all.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    total: usize,
}

impl Found {
    fn add(&mut self, rel: &str, line_number: u64, line: &str) {
        self.total += 1;
        if self.lines.len() < MAX_MATCHES {
            let line = line.trim_end_matches('\n').trim_end_matches('\r');
            let shown: String = line.chars().take(MAX_LINE).collect();
            self.lines.push(format!("{rel}:{line_number}:{shown}"));
        }
    }
}

/// A NUL byte in the first 8 KB means binary, as grep tools assume.
fn looks_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
}

stud_sdk::export_tool!(Grep);
