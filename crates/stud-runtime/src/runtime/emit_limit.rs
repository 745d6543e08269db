//! How many events and log lines one extension may publish: a token bucket
//! per extension (all its instances share it), so one extension's flood
//! (a tool calling `progress` in a tight loop) costs it its own events,
//! not everyone's place on the bus. What it loses is counted and reported
//! as one notice when it may publish again.

use std::time::Instant;

/// Events (and log lines) an extension may publish in a burst.
pub const BURST: f64 = 200.0;
/// Events per second it may publish once the burst is spent.
pub const PER_SECOND: f64 = 100.0;

#[derive(Debug)]
pub struct EmitLimiter {
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

/// Whether an event may go out.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Publish it; `suppressed` events were dropped since the last one
    /// that went out (report them first).
    Pass {
        suppressed: u64,
    },
    Drop,
}

impl Default for EmitLimiter {
    fn default() -> Self {
        EmitLimiter {
            tokens: BURST,
            last: Instant::now(),
            suppressed: 0,
        }
    }
}

impl EmitLimiter {
    pub fn admit(&mut self) -> Admit {
        self.admit_at(Instant::now())
    }

    fn admit_at(&mut self, now: Instant) -> Admit {
        let elapsed = now.saturating_duration_since(self.last);
        self.last = now;
        self.tokens = (self.tokens + elapsed.as_secs_f64() * PER_SECOND).min(BURST);
        if self.tokens < 1.0 {
            self.suppressed += 1;
            return Admit::Drop;
        }
        self.tokens -= 1.0;
        Admit::Pass {
            suppressed: std::mem::take(&mut self.suppressed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The wait until one more event may pass.
    fn refill_time() -> Duration {
        Duration::from_secs_f64(1.0 / PER_SECOND)
    }

    #[test]
    fn a_flood_is_cut_to_the_burst_then_counted() {
        let mut l = EmitLimiter::default();
        let t0 = Instant::now();
        l.last = t0;
        let passed = (0..100_000)
            .filter(|_| matches!(l.admit_at(t0), Admit::Pass { .. }))
            .count();
        assert_eq!(passed, BURST as usize);
        let later = t0 + refill_time() * 2;
        assert_eq!(
            l.admit_at(later),
            Admit::Pass {
                suppressed: 100_000 - BURST as u64
            }
        );
        assert_eq!(l.admit_at(later), Admit::Pass { suppressed: 0 });
    }
}
