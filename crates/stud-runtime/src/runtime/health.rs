//! Per-extension call statistics for `/health`: how often it was called,
//! how often that failed and why last, and how long calls took. Updated
//! once per call, under a lock no call holds for longer than the update.

use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
pub struct CallStats {
    inner: Mutex<Counts>,
}

#[derive(Default, Clone)]
struct Counts {
    calls: u64,
    failures: u64,
    last_error: Option<String>,
    total: Duration,
    slowest: Duration,
}

pub use stud_protocol::session_view::Health;

impl CallStats {
    pub fn record(&self, took: Duration, error: Option<String>) {
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        c.calls += 1;
        c.total += took;
        c.slowest = c.slowest.max(took);
        if let Some(e) = error {
            c.failures += 1;
            c.last_error = Some(e);
        }
    }

    pub fn snapshot(&self) -> Health {
        let c = self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0;
        Health {
            calls: c.calls,
            failures: c.failures,
            last_error: c.last_error,
            mean_ms: if c.calls == 0 {
                0.0
            } else {
                ms(c.total / u32::try_from(c.calls).unwrap_or(u32::MAX))
            },
            max_ms: ms(c.slowest),
            instantiations: 0,
            metered: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_failures_and_keeps_the_last_error() {
        let s = CallStats::default();
        s.record(Duration::from_millis(2), None);
        s.record(Duration::from_millis(4), Some("trap".into()));
        let h = s.snapshot();
        assert_eq!((h.calls, h.failures), (2, 1));
        assert_eq!(h.last_error.as_deref(), Some("trap"));
        assert_eq!(h.mean_ms, 3.0);
        assert_eq!(h.max_ms, 4.0);
    }
}
