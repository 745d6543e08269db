//! `redact-secrets`: a transform at `tool-call.post` that replaces tokens
//! shaped like well-known credentials in the tool result with `[REDACTED]`.

use stud_sdk::hook_payloads::{SlotPayload, ToolCallPost};
use stud_sdk::prelude::*;

/// Credential prefixes and the least number of token characters after them.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-ant-", 20),
    ("sk-", 20),
    ("ghp_", 30),
    ("github_pat_", 30),
    ("xoxb-", 20),
    ("AKIA", 16),
    ("AIza", 30),
];

#[derive(Default)]
struct Redact {
    redacted: u64,
}

impl Hook for Redact {
    fn run(&mut self, _slot: HookSlot, payload: Value) -> Result<HookOutcome, Error> {
        // Only `tool-call.post` carries a result; anything else goes on
        // as it came.
        let Some(mut post) = ToolCallPost::from_value(&payload) else {
            return Ok(HookOutcome::Transform(payload));
        };
        let before = self.redacted;
        post.result
            .content
            .iter_mut()
            .for_each(|part| self.walk(part));
        if self.redacted == before {
            return Ok(HookOutcome::Transform(payload));
        }
        host::log::info(&format!("redacted {} token(s)", self.redacted - before));
        Ok(HookOutcome::Transform(post.into_value()))
    }
}

impl Redact {
    fn walk(&mut self, v: &mut Value) {
        match v {
            Value::String(s) => {
                let (out, n) = redact(s);
                if n > 0 {
                    *s = out;
                    self.redacted += n;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.walk(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.walk(x)),
            _ => {}
        }
    }
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Replace every credential-shaped token; returns the text and the count.
fn redact(text: &str) -> (String, u64) {
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut rest = text;
    'scan: while !rest.is_empty() {
        // Only start a match at a token boundary.
        let at_boundary = out.chars().last().is_none_or(|c| !token_char(c));
        if at_boundary {
            for (prefix, min) in PREFIXES {
                if let Some(after) = rest.strip_prefix(prefix) {
                    let len = after.find(|c: char| !token_char(c)).unwrap_or(after.len());
                    if len >= *min {
                        out.push_str("[REDACTED]");
                        count += 1;
                        rest = &after[len..];
                        continue 'scan;
                    }
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    (out, count)
}

stud_sdk::export_hook!(Redact);
