//! Text editing helpers for tools that change files.

use crate::Error;

/// Replace the one occurrence of `old` in `content` with `new`. Zero
/// matches, or several, are errors that say where (1-based line numbers),
/// so the model can make `old` unique.
pub fn replace_once(content: &str, old: &str, new: &str) -> Result<String, Error> {
    if old.is_empty() {
        return Err(Error::invalid_input(
            "old_string is empty; give the exact text to replace",
        ));
    }
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    match starts.as_slice() {
        [] => Err(Error::tool(
            "no-match",
            "old_string was not found; read the file again and copy the text exactly (whitespace included)",
        )),
        [at] => {
            let mut out = String::with_capacity(content.len() + new.len());
            out.push_str(&content[..*at]);
            out.push_str(new);
            out.push_str(&content[at + old.len()..]);
            Ok(out)
        }
        many => {
            let lines: Vec<String> = many
                .iter()
                .map(|i| format!("line {}", line_of(content, *i)))
                .collect();
            Err(Error::tool(
                "ambiguous-match",
                format!(
                    "old_string occurs {} times (at {}); include more surrounding text so it matches once",
                    many.len(),
                    lines.join(", ")
                ),
            ))
        }
    }
}

/// The note that ends a page of `read` output when lines remain after the
/// `shown_end`-th of `total` (both 1-based counts), telling the model how
/// to go on; `None` when the page reached the end.
pub fn more_lines(total: u64, shown_end: u64) -> Option<String> {
    (shown_end < total).then(|| {
        format!(
            "[{} more lines; call read with offset {} to continue]\n",
            total - shown_end,
            shown_end + 1
        )
    })
}

/// 1-based line number of byte offset `at`.
pub fn line_of(content: &str, at: usize) -> usize {
    content[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_once() {
        assert_eq!(replace_once("a b c", "b", "x").unwrap(), "a x c");
        let e = replace_once("x\ny\nx\n", "x", "z").unwrap_err();
        assert_eq!(e.code(), "ambiguous-match");
        assert!(e.message().contains("line 1, line 3"), "{}", e.message());
        assert_eq!(
            replace_once("abc", "q", "z").unwrap_err().code(),
            "no-match"
        );
    }
}
