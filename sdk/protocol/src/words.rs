//! The closed sets of words kernel events carry (levels, decisions,
//! statuses, stage names), as enums: a UI matches a variant, and a word
//! outside the set fails to parse instead of silently matching nothing.
//! On the wire each is the lower-case (kebab-case) word it always was.

use serde::{Deserialize, Serialize};

macro_rules! words {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $word)] $variant,)*
        }

        impl $name {
            /// Every word, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The word on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($word => Ok($name::$variant),)*
                    other => Err(format!(
                        "`{other}` is not one of: {}",
                        [$($word),*].join(", ")
                    )),
                }
            }
        }
    };
}

words! {
    /// How much a message matters (`diagnostic`, `extension.log`).
    Level {
        Trace = "trace",
        Debug = "debug",
        Info = "info",
        Warn = "warn",
        Error = "error",
    }
}

words! {
    /// What one layer of the authority stack decided about a call.
    Decision {
        Approve = "approve",
        Deny = "deny",
        /// Headless, and a person was needed.
        Halt = "halt",
        /// The layer had nothing to decide (no stage running; the mode
        /// inside a stage).
        Pass = "pass",
    }
}

words! {
    /// How a turn (or an agent's turn, or a workflow) ended.
    TurnResult {
        Ok = "ok",
        Error = "error",
        Cancelled = "cancelled",
        Halted = "halted",
    }
}

words! {
    /// How a slash command ended.
    CommandStatus {
        Ok = "ok",
        Failed = "failed",
        /// Not run: not turn-safe while a turn runs, or not chosen.
        Refused = "refused",
    }
}

words! {
    /// How a stage execution ended.
    StageOutcome {
        Ok = "ok",
        Retry = "retry",
        Skip = "skip",
        Fail = "fail",
    }
}

words! {
    /// A stage of the message loop.
    LoopStage {
        ReceiveInput = "receive-input",
        ComposeRequest = "compose-request",
        SendRequest = "send-request",
        StreamResponse = "stream-response",
        ToolCall = "tool-call",
        Render = "render",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_round_trips_through_json_and_text() {
        for level in Level::ALL {
            let json = serde_json::to_string(level).expect("serialize");
            assert_eq!(json, format!("\"{}\"", level.as_str()));
            assert_eq!(serde_json::from_str::<Level>(&json).expect("parse"), *level);
            assert_eq!(level.as_str().parse::<Level>(), Ok(*level));
        }
        for stage in LoopStage::ALL {
            let json = serde_json::to_string(stage).expect("serialize");
            assert_eq!(
                serde_json::from_str::<LoopStage>(&json).expect("parse"),
                *stage
            );
        }
        assert!("warning".parse::<Level>().unwrap_err().contains("warn"));
        assert!(serde_json::from_str::<Decision>("\"maybe\"").is_err());
    }
}
