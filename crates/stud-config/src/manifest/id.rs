//! Extension ids. They name data folders, event prefixes (`ext.<id>.`) and
//! dependency keys, so the alphabet is kept to what is safe in all three.

use std::fmt;
use std::str::FromStr;

use super::problems::quote;

/// Longest id; long enough for descriptive names, short enough for paths.
pub const MAX_ID_LEN: usize = 64;

/// A validated extension id: `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`, at most
/// [`MAX_ID_LEN`] characters.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct ExtensionId(String);

/// Why a text is not an [`ExtensionId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a valid extension id: {reason}", quote(.value))]
pub struct InvalidId {
    pub value: String,
    pub reason: &'static str,
}

impl ExtensionId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A valid id close to `text` (lowercased, other characters turned into
    /// single dashes), for "write this instead" hints.
    pub fn suggest(text: &str) -> Option<ExtensionId> {
        let mut out = String::new();
        for c in text.chars().take(MAX_ID_LEN * 2) {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                out.push(c);
            } else if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
        }
        let trimmed = out.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
        let mut candidate: String = trimmed.chars().take(MAX_ID_LEN).collect();
        while candidate.ends_with('-') {
            candidate.pop();
        }
        candidate.parse().ok()
    }
}

impl FromStr for ExtensionId {
    type Err = InvalidId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |reason| {
            Err(InvalidId {
                value: s.to_string(),
                reason,
            })
        };
        let Some(first) = s.chars().next() else {
            return fail("it is empty");
        };
        if s.chars().count() > MAX_ID_LEN {
            return fail("it is longer than 64 characters");
        }
        if !first.is_ascii_lowercase() {
            return fail("it must start with a lowercase letter a-z");
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return fail("only lowercase letters a-z, digits and dashes are allowed");
        }
        if s.ends_with('-') || s.contains("--") {
            return fail("dashes must separate letters or digits (no trailing or double dash)");
        }
        Ok(ExtensionId(s.to_string()))
    }
}

impl TryFrom<String> for ExtensionId {
    type Error = InvalidId;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<ExtensionId> for String {
    fn from(id: ExtensionId) -> String {
        id.0
    }
}

impl fmt::Display for ExtensionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ExtensionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects() {
        for ok in ["read", "a", "context-7", "open-ai2-chat", &"a".repeat(64)] {
            assert!(ok.parse::<ExtensionId>().is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Read",
            "7up",
            "-a",
            "a-",
            "a--b",
            "a_b",
            "a.b",
            "é",
            &"a".repeat(65),
        ] {
            assert!(bad.parse::<ExtensionId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn suggests_a_valid_id() {
        assert_eq!(
            ExtensionId::suggest("Read_File").map(String::from),
            Some("read-file".into())
        );
        assert_eq!(
            ExtensionId::suggest("9 lives!").map(String::from),
            Some("lives".into())
        );
        assert_eq!(ExtensionId::suggest("___"), None);
    }
}
