//! Where an extension was found. Later scopes override earlier ones by id.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Built into the stud binary.
    Bundled,
    /// `~/.stud/extensions/`.
    Global,
    /// `<project>/.stud/extensions/`, read only after the user trusts the
    /// project.
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Bundled => "bundled",
            Scope::Global => "global",
            Scope::Project => "project",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
