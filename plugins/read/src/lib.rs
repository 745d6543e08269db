//! `read`: a file's lines, numbered, with an optional range and a size
//! limit; an image file as an image.

mod image;

use std::io::BufRead;

use stud_sdk::prelude::*;

/// Files larger than this are refused unless a line range is given.
const MAX_BYTES: u64 = 256 * 1024;
const DEFAULT_LIMIT: u64 = 2000;

#[derive(Default)]
struct Read;

impl Tool for Read {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("read", "Read a text file in the project, with line numbers")
            .param(
                "path",
                "string",
                "File path relative to the project root",
                true,
            )
            .param("offset", "integer", "First line to show (1-based)", false)
            .param(
                "limit",
                "integer",
                "How many lines to show (default 2000)",
                false,
            )
            .read_only()
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        stud_sdk::fs::approval_path(args.str("path")?)
    }

    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let rel = args.str("path")?;
        let path = stud_sdk::fs::project_path(call, rel)?;
        let meta = std::fs::metadata(&path).map_err(|e| Error::io(rel, e))?;
        if meta.is_dir() {
            return Err(Error::invalid_input(format!(
                "`{rel}` is a directory; use the list tool"
            )));
        }
        if !meta.is_file() {
            return Err(Error::invalid_input(format!(
                "`{rel}` is not a regular file (a pipe or device); read only files"
            )));
        }
        let offset = args.opt_u64("offset").unwrap_or(1).max(1);
        let limit = args.opt_u64("limit").unwrap_or(DEFAULT_LIMIT);
        if meta.len() > MAX_BYTES && args.get("offset").is_none() && args.get("limit").is_none() {
            return Err(Error::invalid_input(format!(
                "`{rel}` is {} bytes (over {MAX_BYTES}); read it in parts with offset and limit",
                meta.len()
            )));
        }
        // Streamed line by line: a range of a huge file costs the range,
        // not the file (guest memory is capped).
        let file = std::fs::File::open(&path).map_err(|e| Error::io(rel, e))?;
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
        let head = reader.fill_buf().map_err(|e| Error::io(rel, e))?;
        if let Some(media_type) = image::media_type(rel, head) {
            let bytes = std::fs::read(&path).map_err(|e| Error::io(rel, e))?;
            return image::output(rel, media_type, &bytes);
        }
        if head.iter().take(8000).any(|b| *b == 0) {
            return Err(Error::invalid_input(format!(
                "`{rel}` looks binary; read only text files"
            )));
        }
        let first = offset - 1;
        let mut total = 0u64;
        let mut out = String::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::io(rel, e))?;
            if n == 0 {
                break;
            }
            if total >= first && total - first < limit {
                let text = String::from_utf8_lossy(&line);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                out.push_str(&format!("{:>6}\t{}\n", total + 1, text));
                if out.len() as u64 > 2 * MAX_BYTES {
                    return Err(Error::invalid_input(format!(
                        "lines {offset}..{} of `{rel}` are over {} bytes; ask for fewer lines with limit",
                        total + 1,
                        2 * MAX_BYTES
                    )));
                }
            }
            total += 1;
        }
        let shown_end = (offset - 1 + limit).min(total);
        out.push_str(&stud_sdk::text::more_lines(total, shown_end).unwrap_or_default());
        Ok(ToolOutput::text(out)
            .with_details(json!({"path": rel, "lines": total, "bytes": meta.len()})))
    }
}

stud_sdk::export_tool!(Read);
