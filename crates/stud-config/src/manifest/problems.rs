//! What validation reports: one [`Problem`] per wrong field, all of them
//! gathered into a [`ManifestError`], so an author fixes a manifest in one
//! round instead of one error per attempt.

use std::fmt;
use std::path::PathBuf;

/// Stop collecting after this many problems: a hostile or badly broken file
/// could otherwise yield tens of thousands of lines nobody reads.
pub const MAX_PROBLEMS: usize = 100;

/// Longest excerpt of author text quoted back in a message (values can be
/// up to the whole file size), and how it is quoted.
pub use stud_protocol::text_enum::{QUOTE_LIMIT, quote};

/// One thing wrong with a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted path of the field, e.g. `capabilities.network[1]` or
    /// `hooks[0].slot`; `(syntax)` and `(file)` for whole-file problems.
    pub field: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl Problem {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Pseudo-fields like `(syntax)` are not keys, so they are not quoted
        // as code.
        if self.field.starts_with('(') {
            write!(f, "{}: ", self.field)?;
        } else {
            write!(f, "`{}`: ", self.field)?;
        }
        // Continuation lines stay inside the bullet they belong to.
        for (i, line) in self.message.lines().enumerate() {
            if i > 0 {
                f.write_str("\n    ")?;
            }
            f.write_str(line.trim_end())?;
        }
        Ok(())
    }
}

/// Every problem found in one manifest file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.file, .problems))]
pub struct ManifestError {
    pub file: PathBuf,
    pub problems: Vec<Problem>,
}

fn render(file: &std::path::Path, problems: &[Problem]) -> String {
    let mut out = format!("invalid extension manifest {}:", file.display());
    for problem in problems {
        out.push_str("\n  - ");
        out.push_str(&problem.to_string());
    }
    out
}

/// Collects problems in the order validation visits fields.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    list: Vec<Problem>,
    dropped: usize,
}

impl Problems {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        if self.list.len() < MAX_PROBLEMS {
            self.list.push(Problem::new(field, message));
        } else {
            self.dropped += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn into_vec(mut self) -> Vec<Problem> {
        if self.dropped > 0 {
            let message = format!(
                "{} more problems not shown; fix the ones above and validate again",
                self.dropped
            );
            self.list.push(Problem::new("(more)", message));
        }
        self.list
    }
}

/// Shortens third-party messages (they may embed author values whole).
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// `key` as a path segment: bare when TOML would accept it bare, quoted
/// otherwise (so `a.b` as one key is not mistaken for a nested path).
pub fn segment(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare && key.len() <= QUOTE_LIMIT {
        key.to_string()
    } else {
        quote(key)
    }
}

/// `prefix.key`, or just `key` at the top level.
pub fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        segment(key)
    } else {
        format!("{prefix}.{}", segment(key))
    }
}

/// The TOML type of a value with its article, for "expected X, found Y".
pub fn type_name(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_and_shortens() {
        assert_eq!(quote("a\"b\n"), "\"a\\\"b\\n\"");
        let long = "x".repeat(1000);
        assert_eq!(quote(&long).chars().count(), QUOTE_LIMIT + 3);
    }

    #[test]
    fn segments_quote_non_bare_keys() {
        assert_eq!(join("", "id"), "id");
        assert_eq!(join("limits", "memory-mib"), "limits.memory-mib");
        assert_eq!(join("dependencies", "a.b"), "dependencies.\"a.b\"");
    }

    #[test]
    fn problems_are_capped() {
        let mut p = Problems::default();
        for i in 0..MAX_PROBLEMS + 5 {
            p.push(format!("f{i}"), "m");
        }
        let list = p.into_vec();
        assert_eq!(list.len(), MAX_PROBLEMS + 1);
        assert!(list[MAX_PROBLEMS].message.starts_with("5 more problems"));
    }

    #[test]
    fn display_indents_continuation_lines() {
        let err = ManifestError {
            file: "x/extension.toml".into(),
            problems: vec![Problem::new("(syntax)", "a\nb")],
        };
        assert_eq!(
            err.to_string(),
            "invalid extension manifest x/extension.toml:\n  - (syntax): a\n    b"
        );
    }
}
