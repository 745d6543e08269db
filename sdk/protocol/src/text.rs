//! Text rules for editing files, applied the same way by the `edit` tool
//! (a component) and by the kernel when an editor edits for the model.

use std::fmt;

/// Why [`replace_once`] changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplaceError {
    /// `old` was empty: there is nothing to find.
    EmptyOld,
    /// `old` is not in the text.
    NoMatch,
    /// `old` occurs more than once; the 1-based lines where each starts.
    Ambiguous { lines: Vec<usize> },
}

impl ReplaceError {
    /// The stable error code tools report (`no-match`, `ambiguous-match`,
    /// `input-invalid`).
    pub fn code(&self) -> &'static str {
        match self {
            ReplaceError::EmptyOld => "input-invalid",
            ReplaceError::NoMatch => "no-match",
            ReplaceError::Ambiguous { .. } => "ambiguous-match",
        }
    }
}

impl fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplaceError::EmptyOld => {
                f.write_str("old_string is empty; give the exact text to replace")
            }
            ReplaceError::NoMatch => f.write_str(
                "old_string was not found; read the file again and copy the text exactly (whitespace included)",
            ),
            ReplaceError::Ambiguous { lines } => {
                let at: Vec<String> = lines.iter().map(|l| format!("line {l}")).collect();
                write!(
                    f,
                    "old_string occurs {} times (at {}); include more surrounding text so it matches once",
                    lines.len(),
                    at.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ReplaceError {}

/// Replace the one occurrence of `old` in `content` with `new`. Zero
/// matches, or several, are errors that say where (1-based line numbers),
/// so the model can make `old` unique.
pub fn replace_once(content: &str, old: &str, new: &str) -> Result<String, ReplaceError> {
    if old.is_empty() {
        return Err(ReplaceError::EmptyOld);
    }
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    match starts.as_slice() {
        [] => Err(ReplaceError::NoMatch),
        [at] => {
            let mut out = String::with_capacity(content.len() + new.len());
            out.push_str(&content[..*at]);
            out.push_str(new);
            out.push_str(&content[at + old.len()..]);
            Ok(out)
        }
        many => Err(ReplaceError::Ambiguous {
            lines: many.iter().map(|i| line_of(content, *i)).collect(),
        }),
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
        assert_eq!(replace_once("a b c", "b", "x"), Ok("a x c".to_string()));
        let e = replace_once("x\ny\nx\n", "x", "z").unwrap_err();
        assert_eq!(e.code(), "ambiguous-match");
        assert!(e.to_string().contains("line 1, line 3"), "{e}");
        assert_eq!(
            replace_once("abc", "q", "z").unwrap_err().code(),
            "no-match"
        );
        assert_eq!(
            replace_once("abc", "", "z").unwrap_err(),
            ReplaceError::EmptyOld
        );
    }

    #[test]
    fn more_lines_only_when_some_remain() {
        assert_eq!(more_lines(10, 10), None);
        assert_eq!(
            more_lines(10, 4).as_deref(),
            Some("[6 more lines; call read with offset 5 to continue]\n")
        );
    }
}
