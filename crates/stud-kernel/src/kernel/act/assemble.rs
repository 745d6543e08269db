//! STREAM_RESPONSE's fold: provider stream events into one assistant
//! response. Pure (no I/O), so tests drive it with event sequences.

use std::collections::BTreeMap;

use crate::kernel::response_limits::{Part, ResponseBudget, ResponseLimits, TooLarge};
use crate::runtime::domain::{FinishReason, StreamEvent};
use crate::runtime::domain::{Thinking, ToolCall, Usage};

/// A response read to its end.
#[derive(Debug)]
pub(crate) struct Assembled {
    pub text: String,
    /// Thinking blocks in order, each with its signature (the API wants
    /// them back unchanged).
    pub thinking: Vec<Thinking>,
    pub calls: Vec<ToolCall>,
    pub finish: FinishReason,
}

/// What a folded event means to the rest of the kernel (the events it
/// publishes, the usage it counts).
#[derive(Debug)]
pub(crate) enum Seen {
    Text(String),
    Reasoning(String),
    CallStart {
        index: u32,
        id: String,
        name: String,
    },
    CallDelta {
        index: u32,
        delta: String,
    },
    CallEnd(u32),
    Usage(Usage),
    Finish(FinishReason),
}

/// The response so far.
pub(crate) struct Assembly {
    text: String,
    thinking: Vec<Thinking>,
    calls: BTreeMap<u32, (String, String, String)>,
    finish: FinishReason,
    budget: ResponseBudget,
}

impl Assembly {
    pub fn new(limits: ResponseLimits) -> Self {
        Assembly {
            text: String::new(),
            thinking: Vec::new(),
            calls: BTreeMap::new(),
            finish: FinishReason::Other,
            budget: ResponseBudget::new(limits),
        }
    }

    /// The text so far (for a failure's partial text).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Fold one batch. The whole batch is counted against the response
    /// limits before any of it is taken.
    pub fn fold(&mut self, batch: Vec<StreamEvent>) -> Result<Vec<Seen>, TooLarge> {
        count(&mut self.budget, &batch)?;
        let mut seen = Vec::with_capacity(batch.len());
        for ev in batch {
            match ev {
                StreamEvent::TextDelta(d) => {
                    self.text.push_str(&d);
                    seen.push(Seen::Text(d));
                }
                StreamEvent::ThinkingDelta(d) => {
                    if !d.text.is_empty() {
                        seen.push(Seen::Reasoning(d.text.clone()));
                    }
                    add_thinking(&mut self.thinking, d.text, d.signature);
                }
                StreamEvent::ToolCallStart(s) => {
                    seen.push(Seen::CallStart {
                        index: s.index,
                        id: s.id.clone(),
                        name: s.name.clone(),
                    });
                    self.calls.insert(s.index, (s.id, s.name, String::new()));
                }
                StreamEvent::ToolCallDelta(d) => {
                    if let Some(c) = self.calls.get_mut(&d.index) {
                        c.2.push_str(&d.arguments);
                    }
                    seen.push(Seen::CallDelta {
                        index: d.index,
                        delta: d.arguments,
                    });
                }
                // Providers may end other blocks too (Anthropic ends every
                // content block): only tool calls are reported.
                StreamEvent::ToolCallEnd(index) if self.calls.contains_key(&index) => {
                    seen.push(Seen::CallEnd(index));
                }
                StreamEvent::ToolCallEnd(_) => {}
                StreamEvent::Usage(u) => seen.push(Seen::Usage(u)),
                StreamEvent::Finish(f) => {
                    self.finish = f;
                    seen.push(Seen::Finish(f));
                }
            }
        }
        Ok(seen)
    }

    pub fn finish(self) -> Assembled {
        let calls = self
            .calls
            .into_values()
            .map(|(id, name, args)| ToolCall {
                id,
                name,
                arguments: if args.trim().is_empty() {
                    "{}".into()
                } else {
                    args
                },
            })
            .collect();
        Assembled {
            text: self.text,
            thinking: self.thinking,
            calls,
            finish: self.finish,
        }
    }
}

/// Count what a batch of stream events adds against the response limits.
fn count(budget: &mut ResponseBudget, batch: &[StreamEvent]) -> Result<(), TooLarge> {
    for ev in batch {
        match ev {
            StreamEvent::TextDelta(d) => budget.add(Part::Text, d.len())?,
            StreamEvent::ThinkingDelta(d) => budget.add(
                Part::Thinking,
                d.text.len() + d.signature.as_ref().map_or(0, String::len),
            )?,
            StreamEvent::ToolCallStart(s) => {
                budget.add(Part::ToolArguments, s.id.len() + s.name.len())?
            }
            StreamEvent::ToolCallDelta(d) => budget.add(Part::ToolArguments, d.arguments.len())?,
            _ => {}
        }
    }
    Ok(())
}

pub(crate) use crate::kernel::replay::stream_json::finish_str;

/// A thinking delta: a signature closes the block it ends (Anthropic sends
/// one per block), so text after it starts a new block; a signature with
/// no open block is a block of its own (an opaque, redacted one).
fn add_thinking(blocks: &mut Vec<Thinking>, text: String, signature: Option<String>) {
    let open = blocks.last_mut().filter(|b| b.signature.is_none());
    match open {
        Some(block) => {
            block.text.push_str(&text);
            block.signature = signature;
        }
        None if text.is_empty() && signature.is_none() => {}
        None => blocks.push(Thinking { text, signature }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::domain::{ThinkingDelta, ToolCallDelta, ToolCallStart};

    #[test]
    fn thinking_blocks_stay_apart_with_their_signatures() {
        let mut blocks = Vec::new();
        add_thinking(&mut blocks, "first ".into(), None);
        add_thinking(&mut blocks, "block".into(), None);
        add_thinking(&mut blocks, String::new(), Some("sig1".into()));
        // A redacted block: only opaque data.
        add_thinking(&mut blocks, String::new(), Some("redacted:abc".into()));
        add_thinking(&mut blocks, "second".into(), None);
        add_thinking(&mut blocks, String::new(), Some("sig2".into()));
        let got: Vec<(&str, Option<&str>)> = blocks
            .iter()
            .map(|b| (b.text.as_str(), b.signature.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("first block", Some("sig1")),
                ("", Some("redacted:abc")),
                ("second", Some("sig2"))
            ]
        );
    }

    #[test]
    fn interleaved_calls_assemble_by_index() {
        let mut a = Assembly::new(ResponseLimits::default());
        let start = |index: u32, id: &str, name: &str| {
            StreamEvent::ToolCallStart(ToolCallStart {
                index,
                id: id.into(),
                name: name.into(),
            })
        };
        let delta = |index: u32, s: &str| {
            StreamEvent::ToolCallDelta(ToolCallDelta {
                index,
                arguments: s.into(),
            })
        };
        let seen = a
            .fold(vec![
                StreamEvent::TextDelta("Let me ".into()),
                StreamEvent::ThinkingDelta(ThinkingDelta {
                    text: "hm".into(),
                    signature: None,
                }),
                start(1, "b", "list"),
                start(0, "a", "read"),
                delta(0, "{\"path\":"),
                delta(1, ""),
                delta(0, "\"x\"}"),
                StreamEvent::ToolCallEnd(7),
                StreamEvent::ToolCallEnd(0),
            ])
            .unwrap();
        assert!(
            !seen.iter().any(|s| matches!(s, Seen::CallEnd(7))),
            "unknown blocks are not reported"
        );
        a.fold(vec![
            StreamEvent::TextDelta("look.".into()),
            StreamEvent::Finish(FinishReason::ToolCalls),
        ])
        .unwrap();
        let done = a.finish();
        assert_eq!(done.text, "Let me look.");
        assert_eq!(done.finish, FinishReason::ToolCalls);
        let calls: Vec<(&str, &str)> = done
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("read", "{\"path\":\"x\"}"), ("list", "{}")]);
    }

    #[test]
    fn a_batch_over_the_limit_is_refused_whole() {
        let limits = ResponseLimits {
            text_bytes: 8,
            ..ResponseLimits::default()
        };
        let mut a = Assembly::new(limits);
        a.fold(vec![StreamEvent::TextDelta("1234".into())]).unwrap();
        let e = a.fold(vec![
            StreamEvent::TextDelta("56".into()),
            StreamEvent::TextDelta("789".into()),
        ]);
        assert!(e.is_err());
        assert_eq!(a.text(), "1234", "nothing of the refused batch was taken");
    }
}
