//! Keeping the conversation inside the model's context window. Before each
//! request the kernel estimates its size (about 4 bytes a token, calibrated
//! by the provider's reported input tokens); at `compaction.warnAt` (80 %)
//! it warns, at `compaction.compactAt` (95 %) it compacts, in tiers, until
//! the request is back under the warning line:
//! 1. shorten old tool outputs;
//! 2. summarize the old turns with the session's own provider;
//! 3. drop the middle, keeping the first message and the recent ones.
//!
//! The system prompt and context-provider fragments are rebuilt for every
//! request, so they are pinned. The recent messages (`keepRecent`) and a
//! tool call's pairing with its result are never broken. A
//! context-overflow error from the provider compacts and retries once.
//! Every compaction is an event saying what was removed.

use serde_json::Value;

use super::conversation::Conversation;
use super::payloads::messages_json;
use super::usage::{add_usage, zero_usage};
use crate::config::CompactionSettings;
use crate::runtime::Extension;
use crate::runtime::domain::{ContentPart, Message, ResultPart, Role, Usage};
use crate::runtime::domain::{Request, RequestParams, StreamEvent};
use stud_protocol::events::KernelEvent;
use stud_protocol::session_records::SessionRecord;

/// Longest old tool output kept by tier 1 (characters).
const SHORT_RESULT: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionConfig {
    pub warn_at: f64,
    pub compact_at: f64,
    pub keep_recent: usize,
}

impl CompactionConfig {
    pub fn from_settings(s: &CompactionSettings) -> Self {
        CompactionConfig {
            warn_at: s.warn_at.unwrap_or(0.8).clamp(0.05, 1.0),
            compact_at: s.compact_at.unwrap_or(0.95).clamp(0.05, 1.0),
            keep_recent: s.keep_recent.unwrap_or(6).max(1),
        }
    }
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self::from_settings(&CompactionSettings::default())
    }
}

/// The raw estimate of a request (before calibration).
pub fn raw_estimate(system: Option<&str>, messages: &[Message], tools_json: usize) -> u64 {
    estimate_tokens(system.unwrap_or_default())
        + estimate_tokens(&Value::Array(messages_json(messages)).to_string())
        + (tools_json as u64).div_ceil(4)
}

/// Rough token estimate used for budgets and compaction: ~4 bytes per
/// token for English and code (providers' reported usage corrects it).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Bytes of the tool definitions a request carries.
pub(crate) fn tools_json_len(request: &Request) -> usize {
    request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.len())
        .sum()
}

/// What [`Conversation::fit`] works with.
pub(crate) struct Fit<'a> {
    pub session_id: &'a str,
    pub request: &'a Request,
    /// The model's context window (tokens).
    pub window: u64,
    pub config: CompactionConfig,
    /// Summarizes old turns (tier 2): the session's provider.
    pub summarizer: &'a Extension,
    pub params: RequestParams,
    /// Compact whatever the estimate (the provider said it overflowed).
    pub force: bool,
    /// The turn's warning was shown (it is shown once a turn).
    pub warned: &'a mut bool,
}

/// What fitting did.
pub(crate) struct Fitted {
    /// The history changed: the request must be composed again.
    pub changed: bool,
    /// Tokens the summary requests spent (paid for like any request).
    pub spent: Usage,
}

impl Conversation {
    /// Calibrated tokens of `request` with `messages` in place of its own.
    pub(crate) fn tokens_with(&self, request: &Request, messages: &[Message]) -> u64 {
        let raw = raw_estimate(request.system.as_deref(), messages, tools_json_len(request));
        (raw as f64 * self.token_ratio).ceil() as u64
    }

    /// Learn how the provider counts: `reported` input tokens for a
    /// request we estimated at `raw`.
    pub(crate) fn calibrate(&mut self, raw: u64, reported: u64) {
        if raw > 0 && reported > 0 {
            self.token_ratio = (reported as f64 / raw as f64).clamp(0.25, 4.0);
        }
    }

    /// Warn or compact before a request is sent.
    pub(crate) async fn fit(&mut self, at: Fit<'_>) -> Fitted {
        let Fit {
            session_id,
            request,
            window,
            config: cfg,
            force,
            warned,
            ..
        } = at;
        let mut fitted = Fitted {
            changed: false,
            spent: zero_usage(),
        };
        let before = self.tokens_with(request, &request.messages);
        let pct = before as f64 / window as f64;
        if pct >= cfg.warn_at && !*warned {
            *warned = true;
            self.bus.record(KernelEvent::ContextWarning {
                tokens: before,
                window,
                percent: (pct * 100.0).round(),
            });
        }
        if pct < cfg.compact_at && !force {
            return fitted;
        }
        let target = (cfg.warn_at * window as f64) as u64;
        for tier in 1..=3u8 {
            let tokens = self.tokens_with(request, &self.messages);
            // Forced (the provider overflowed): at least one tier runs.
            if tokens < target && (fitted.changed || !force) {
                break;
            }
            let keep = cfg.keep_recent;
            let removed = match tier {
                1 => self.shorten_old_results(keep),
                2 => {
                    self.summarize_old(keep, at.summarizer, &at.params, &mut fitted.spent)
                        .await
                }
                _ => self.drop_middle(keep),
            };
            if let Some(what) = removed {
                fitted.changed = true;
                let after = self.tokens_with(request, &self.messages);
                self.bus.record(KernelEvent::ContextCompacted {
                    tier,
                    removed: what.clone(),
                    tokens_before: tokens,
                    tokens_after: after,
                    window,
                });
                // The whole compacted history, so a resume starts from it
                // instead of compacting again.
                let record = SessionRecord::Compaction {
                    tier,
                    removed: what,
                    history: messages_json(&self.messages),
                }
                .to_line();
                self.append_record(session_id, record).await;
            }
        }
        fitted
    }

    /// Where the protected recent part starts: `keep_recent` messages from
    /// the end, moved back to the start of a user turn so no tool call is
    /// separated from its result.
    fn recent_start(&self, keep: usize) -> usize {
        let len = self.messages.len();
        let mut i = len.saturating_sub(keep);
        while i > 0 && !is_turn_start(&self.messages[i]) {
            i -= 1;
        }
        i
    }

    fn shorten_old_results(&mut self, keep: usize) -> Option<String> {
        let end = self.recent_start(keep);
        let (mut count, mut chars) = (0, 0);
        for m in &mut self.messages[..end] {
            for part in &mut m.content {
                let ContentPart::ToolResult(r) = part else {
                    continue;
                };
                for c in &mut r.content {
                    if let ResultPart::Text(t) = c
                        && t.chars().count() > SHORT_RESULT + 100
                    {
                        let keep: String = t.chars().take(SHORT_RESULT).collect();
                        let cut = t.len() - keep.len();
                        *t = format!(
                            "{keep}\n[older tool output shortened by compaction: {cut} bytes removed; run the tool again if you need it]"
                        );
                        count += 1;
                        chars += cut;
                    }
                }
            }
        }
        (count > 0).then(|| format!("shortened {count} old tool outputs ({chars} bytes)"))
    }

    async fn summarize_old(
        &mut self,
        keep: usize,
        provider: &Extension,
        params: &RequestParams,
        spent: &mut Usage,
    ) -> Option<String> {
        let end = self.recent_start(keep);
        if end < 2 {
            return None;
        }
        let mut messages = self.messages[..end].to_vec();
        messages.push(Message {
            role: Role::User,
            content: vec![ContentPart::Text(
                "Summarize the conversation above so it can be continued without it: the goal, decisions, files touched and what is still open. Be concise.".into(),
            )],
        });
        let request = Request {
            system: Some("You write faithful, concise summaries of coding sessions.".into()),
            messages,
            tools: Vec::new(),
            params: params.clone(),
        };
        let mut stream = provider.provider_send(&request).await.ok()?;
        let mut text = String::new();
        loop {
            match provider.provider_next(&mut stream).await {
                Ok(Some(batch)) => {
                    for ev in batch {
                        match ev {
                            StreamEvent::TextDelta(d) => text.push_str(&d),
                            // The summary is paid for like any request.
                            StreamEvent::Usage(u) => add_usage(spent, &u),
                            _ => {}
                        }
                    }
                }
                Ok(None) => break,
                // A summary cut short would silently lose what it left out:
                // the next tier takes over instead.
                Err(_) => return None,
            }
        }
        if text.trim().is_empty() {
            return None;
        }
        let summary = Message {
            role: Role::User,
            content: vec![ContentPart::Text(format!(
                "[Summary of the earlier conversation]\n{}",
                text.trim()
            ))],
        };
        self.messages.splice(..end, [summary]);
        Some(format!("summarized {end} old messages"))
    }

    fn drop_middle(&mut self, keep: usize) -> Option<String> {
        let end = self.recent_start(keep);
        if end <= 1 {
            return None;
        }
        let dropped = end - 1;
        let note = Message {
            role: Role::User,
            content: vec![ContentPart::Text(format!(
                "[{dropped} earlier messages were dropped to fit the context window]"
            ))],
        };
        self.messages.splice(1..end, [note]);
        Some(format!("dropped {dropped} messages from the middle"))
    }
}

fn is_turn_start(m: &Message) -> bool {
    m.role == Role::User
        && !m
            .content
            .iter()
            .any(|p| matches!(p, ContentPart::ToolResult(_)))
}
