//! Conversation messages and percentiles shared by the session benches
//! (`sessions`, `postgres`), so both stores are measured on the same data.

use std::time::Duration;

use stud::runtime::domain::{ContentPart, Message, Role};

/// Message `i` of a made-up conversation: users and assistants in turn,
/// a couple of hundred bytes each.
pub fn message(i: usize) -> Message {
    Message {
        role: if i.is_multiple_of(2) {
            Role::User
        } else {
            Role::Assistant
        },
        content: vec![ContentPart::Text(format!(
            "message {i}: {}",
            "some ordinary conversation text ".repeat(6)
        ))],
    }
}

/// The `p` quantile (0 to 1) of `v`.
pub fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}
