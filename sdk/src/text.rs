//! Text editing helpers for tools that change files (the rules live in
//! `stud-protocol`, so the kernel applies the same ones).

use crate::Error;

pub use stud_protocol::text::{ReplaceError, line_of, more_lines};

/// Replace the one occurrence of `old` in `content` with `new`. Zero
/// matches, or several, are errors that say where (1-based line numbers),
/// so the model can make `old` unique.
pub fn replace_once(content: &str, old: &str, new: &str) -> Result<String, Error> {
    stud_protocol::text::replace_once(content, old, new).map_err(|e| match e {
        ReplaceError::EmptyOld => Error::invalid_input(e.to_string()),
        other => Error::tool(other.code(), other.to_string()),
    })
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
