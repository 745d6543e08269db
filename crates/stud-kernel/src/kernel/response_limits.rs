//! How much one model response may bring once assembled: bytes of text, of
//! thinking and of tool-call arguments (settings `runtime.responseLimits`).
//! A hostile or broken endpoint that streams without end fails the turn
//! with `response-too-large` instead of growing the kernel's memory.

use crate::config::ResponseLimitSettings;

/// 4 MiB of each: a long answer is tens of KB.
pub const DEFAULT_TEXT_BYTES: usize = 4 << 20;
pub const DEFAULT_THINKING_BYTES: usize = 4 << 20;
pub const DEFAULT_TOOL_ARGUMENT_BYTES: usize = 4 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimits {
    pub text_bytes: usize,
    pub thinking_bytes: usize,
    pub tool_argument_bytes: usize,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        ResponseLimits {
            text_bytes: DEFAULT_TEXT_BYTES,
            thinking_bytes: DEFAULT_THINKING_BYTES,
            tool_argument_bytes: DEFAULT_TOOL_ARGUMENT_BYTES,
        }
    }
}

impl ResponseLimits {
    pub fn from_settings(s: &ResponseLimitSettings) -> Self {
        let d = ResponseLimits::default();
        ResponseLimits {
            text_bytes: s.text_bytes.unwrap_or(d.text_bytes).max(1),
            thinking_bytes: s.thinking_bytes.unwrap_or(d.thinking_bytes).max(1),
            tool_argument_bytes: s
                .tool_argument_bytes
                .unwrap_or(d.tool_argument_bytes)
                .max(1),
        }
    }
}

/// Which part of a response went over its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Text,
    Thinking,
    ToolArguments,
}

/// A response that brought more than its limit allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the model's response brought more than {limit} bytes of {what} (runtime.responseLimits.{setting}); the response was abandoned"
)]
pub struct TooLarge {
    pub what: &'static str,
    pub setting: &'static str,
    pub limit: usize,
}

impl TooLarge {
    pub const CODE: &'static str = "response-too-large";
}

/// What one response brought so far, against the limits.
#[derive(Debug, Default)]
pub struct ResponseBudget {
    limits: ResponseLimits,
    text: usize,
    thinking: usize,
    tool_arguments: usize,
}

impl ResponseBudget {
    pub fn new(limits: ResponseLimits) -> Self {
        ResponseBudget {
            limits,
            ..Default::default()
        }
    }

    /// Count `bytes` more of `part`; `Err` once over its limit.
    pub fn add(&mut self, part: Part, bytes: usize) -> Result<(), TooLarge> {
        let (used, limit, what, setting) = match part {
            Part::Text => (&mut self.text, self.limits.text_bytes, "text", "textBytes"),
            Part::Thinking => (
                &mut self.thinking,
                self.limits.thinking_bytes,
                "thinking",
                "thinkingBytes",
            ),
            Part::ToolArguments => (
                &mut self.tool_arguments,
                self.limits.tool_argument_bytes,
                "tool-call arguments",
                "toolArgumentBytes",
            ),
        };
        *used = used.saturating_add(bytes);
        if *used > limit {
            return Err(TooLarge {
                what,
                setting,
                limit,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_has_its_own_limit() {
        let mut b = ResponseBudget::new(ResponseLimits {
            text_bytes: 10,
            thinking_bytes: 5,
            tool_argument_bytes: 3,
        });
        assert!(b.add(Part::Text, 10).is_ok());
        assert!(b.add(Part::Thinking, 5).is_ok());
        let err = b.add(Part::Text, 1).unwrap_err();
        assert_eq!(err.setting, "textBytes");
        assert!(err.to_string().contains("more than 10 bytes of text"));
        assert!(b.add(Part::ToolArguments, 4).is_err());
    }
}
