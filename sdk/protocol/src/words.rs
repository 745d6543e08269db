//! The closed sets of words kernel events carry (levels, decisions,
//! statuses, stage names), as enums: a UI matches a variant, and a word
//! outside the set fails to parse instead of silently matching nothing.
//! On the wire each is the lower-case (kebab-case) word it always was.

use crate::text_enum;

text_enum! {
    /// How much a message matters (`diagnostic`, `extension.log`).
    pub enum Level("level") {
        Trace = "trace",
        Debug = "debug",
        Info = "info",
        Warn = "warn",
        Error = "error",
    }
}

text_enum! {
    /// What one layer of the authority stack decided about a call.
    pub enum Decision("decision") {
        Approve = "approve",
        Deny = "deny",
        /// Headless, and a person was needed.
        Halt = "halt",
        /// The layer had nothing to decide (no stage running; the mode
        /// inside a stage).
        Pass = "pass",
    }
}

text_enum! {
    /// How a turn (or an agent's turn, or a workflow) ended.
    pub enum TurnResult("turn result") {
        Ok = "ok",
        Error = "error",
        Cancelled = "cancelled",
        Halted = "halted",
    }
}

text_enum! {
    /// How a slash command ended.
    pub enum CommandStatus("command status") {
        Ok = "ok",
        Failed = "failed",
        /// Not run: not turn-safe while a turn runs, or not chosen.
        Refused = "refused",
    }
}

text_enum! {
    /// How a stage execution ended.
    pub enum StageOutcome("stage outcome") {
        Ok = "ok",
        Retry = "retry",
        Skip = "skip",
        Fail = "fail",
    }
}

text_enum! {
    /// A stage of the message loop.
    pub enum LoopStage("stage") {
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
        for level in &Level::ALL {
            let json = serde_json::to_string(level).expect("serialize");
            assert_eq!(json, format!("\"{}\"", level.as_str()));
            assert_eq!(serde_json::from_str::<Level>(&json).expect("parse"), *level);
            assert_eq!(level.as_str().parse::<Level>(), Ok(*level));
        }
        for stage in &LoopStage::ALL {
            let json = serde_json::to_string(stage).expect("serialize");
            assert_eq!(
                serde_json::from_str::<LoopStage>(&json).expect("parse"),
                *stage
            );
        }
        assert!(
            "warning"
                .parse::<Level>()
                .unwrap_err()
                .to_string()
                .contains("warn")
        );
        assert!(serde_json::from_str::<Decision>("\"maybe\"").is_err());
    }
}
