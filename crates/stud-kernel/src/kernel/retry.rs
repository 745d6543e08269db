//! Retrying provider requests that failed for a passing reason: rate
//! limits, overload, 5xx and network errors (class `provider-transient`).
//! Exponential backoff with jitter; a server's Retry-After (passed by the
//! provider as `retry_after_ms` in the error context) wins when present.
//! Only the start of a response is retried: once events reached the user,
//! a failure ends the turn instead of repeating text.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::Retries;
use crate::runtime::services::{ErrorClass, ExtError};

/// The error code providers use for "the conversation is too long"; it is
/// never retried as is (compaction reacts to it).
pub const CONTEXT_OVERFLOW: &str = "context-overflow";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    pub fn from_settings(s: &Retries) -> Self {
        let d = RetryPolicy::default();
        RetryPolicy {
            max_retries: s.max_retries.unwrap_or(d.max_retries),
            base_delay: s
                .base_delay_ms
                .map(Duration::from_millis)
                .unwrap_or(d.base_delay),
            max_delay: s
                .max_delay_ms
                .map(Duration::from_millis)
                .unwrap_or(d.max_delay),
        }
    }

    /// Whether `error` may succeed if sent again.
    pub fn retryable(error: &ExtError) -> bool {
        error.class == ErrorClass::ProviderTransient && error.code != CONTEXT_OVERFLOW
    }

    /// The wait before retry number `attempt` (1-based): the server's
    /// Retry-After if it gave one, else `base * 2^(attempt-1)` with the
    /// upper half jittered; never more than `max_delay`.
    pub fn delay(&self, attempt: u32, error: &ExtError) -> Duration {
        if let Some(after) = retry_after(error) {
            return after.min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_delay);
        let half = exp / 2;
        half + half.mul_f64(jitter())
    }
}

/// `retry_after_ms` from the error's context object.
pub fn retry_after(error: &ExtError) -> Option<Duration> {
    let context: serde_json::Value = serde_json::from_str(error.context.as_deref()?).ok()?;
    context
        .get("retry_after_ms")
        .and_then(serde_json::Value::as_u64)
        .map(Duration::from_millis)
}

/// A fraction in [0, 1) that differs between calls; good enough to keep
/// clients from retrying in lockstep.
fn jitter() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mixed = (u64::from(nanos)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    mixed as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(class: ErrorClass, code: &str, context: Option<&str>) -> ExtError {
        ExtError {
            class,
            code: code.into(),
            message: String::new(),
            context: context.map(str::to_string),
        }
    }

    #[test]
    fn classifies_and_backs_off() {
        let p = RetryPolicy::default();
        assert!(RetryPolicy::retryable(&err(
            ErrorClass::ProviderTransient,
            "rate-limited",
            None
        )));
        assert!(!RetryPolicy::retryable(&err(
            ErrorClass::ProviderTransient,
            CONTEXT_OVERFLOW,
            None
        )));
        assert!(!RetryPolicy::retryable(&err(
            ErrorClass::Validation,
            "auth",
            None
        )));
        let e = err(ErrorClass::ProviderTransient, "server", None);
        for attempt in 1..=4 {
            let d = p.delay(attempt, &e);
            let full = Duration::from_millis(500 * (1 << (attempt - 1)));
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
        assert!(p.delay(30, &e) <= p.max_delay);
        let e = err(
            ErrorClass::ProviderTransient,
            "rate-limited",
            Some(r#"{"retry_after_ms": 1200}"#),
        );
        assert_eq!(p.delay(1, &e), Duration::from_millis(1200));
    }
}
