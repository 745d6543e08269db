//! The security mode of a session: how much of the tool-call authority
//! stack's work the person does. Shared vocabulary: settings, the trust
//! review and the kernel all speak of it.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ask,
    Allowlist,
    Yolo,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Allowlist => "allowlist",
            Mode::Yolo => "yolo",
        }
    }
}

impl Mode {
    /// How much a mode lets through without asking: yolo > allowlist > ask.
    fn looseness(self) -> u8 {
        match self {
            Mode::Ask => 0,
            Mode::Allowlist => 1,
            Mode::Yolo => 2,
        }
    }

    /// The stricter of two modes.
    pub fn stricter(self, other: Mode) -> Mode {
        if other.looseness() < self.looseness() {
            other
        } else {
            self
        }
    }

    /// Whether `self` lets through more than `other`.
    pub fn is_looser_than(self, other: Mode) -> bool {
        self.looseness() > other.looseness()
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ask" => Ok(Mode::Ask),
            "allowlist" => Ok(Mode::Allowlist),
            "yolo" => Ok(Mode::Yolo),
            other => Err(format!(
                "unknown security mode `{other}`; use ask, allowlist or yolo"
            )),
        }
    }
}
