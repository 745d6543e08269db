//! What one extension costs, for `/health`, `stud session show --stats`,
//! the `extension.metered` event and the `cpu-ms-per-turn` budget. Shared
//! by the extension's instances and outliving them (a restart after a
//! trap keeps the count); updated with relaxed atomics, no lock on a
//! call's path.
//!
//! - **CPU**: the time the extension's call future spends being polled:
//!   guest code, and host code the guest runs inline (WASI file calls). A
//!   wait in an async import (a fetch, a process, a question) suspends the
//!   call and is not counted. A call's first poll is timed with the
//!   monotonic clock (cheap; most calls end in it, and guest code yields
//!   every epoch tick, so it is short); every later poll with the thread
//!   CPU clock (`CLOCK_THREAD_CPUTIME_ID`), which time the thread spent
//!   descheduled does not inflate.
//! - **Host time**: wall time inside its imports (wasmtime's call hook
//!   around every host function), waits included.
//! - **Peak memory**: the largest linear memory one instance held.
//! - **Network**: bytes sent (request bodies) and received (response
//!   bodies) through the `http` capability.

use std::sync::atomic::{AtomicU64, Ordering};

pub use stud_protocol::session_view::Metered;

#[derive(Debug, Default)]
pub struct Meter {
    cpu_ns: AtomicU64,
    turn_cpu_ns: AtomicU64,
    host_ns: AtomicU64,
    peak_memory: AtomicU64,
    net_out: AtomicU64,
    net_in: AtomicU64,
}

impl Meter {
    pub fn add_cpu(&self, ns: u64) {
        self.cpu_ns.fetch_add(ns, Ordering::Relaxed);
        self.turn_cpu_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub fn add_host(&self, ns: u64) {
        self.host_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub fn note_memory(&self, bytes: u64) {
        self.peak_memory.fetch_max(bytes, Ordering::Relaxed);
    }

    pub fn add_net(&self, sent: u64, received: u64) {
        if sent > 0 {
            self.net_out.fetch_add(sent, Ordering::Relaxed);
        }
        if received > 0 {
            self.net_in.fetch_add(received, Ordering::Relaxed);
        }
    }

    /// A turn begins: the per-turn CPU count starts again.
    pub fn turn_started(&self) {
        self.turn_cpu_ns.store(0, Ordering::Relaxed);
    }

    /// CPU milliseconds since the turn began.
    pub fn turn_cpu_ms(&self) -> f64 {
        self.turn_cpu_ns.load(Ordering::Relaxed) as f64 / 1e6
    }

    pub fn snapshot(&self) -> Metered {
        let ms = |a: &AtomicU64| (a.load(Ordering::Relaxed) as f64 / 1e4).round() / 100.0;
        Metered {
            cpu_ms: ms(&self.cpu_ns),
            host_ms: ms(&self.host_ns),
            peak_memory_bytes: self.peak_memory.load(Ordering::Relaxed),
            net_bytes_sent: self.net_out.load(Ordering::Relaxed),
            net_bytes_received: self.net_in.load(Ordering::Relaxed),
        }
    }
}

/// CPU time this thread has used, in nanoseconds (0 where the platform
/// does not say).
pub fn thread_cpu_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
        if ok {
            return (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread clock counts work done on this thread, not time slept:
    /// four times the work costs more than twice the CPU (whatever else
    /// the machine does), a sleep almost none.
    #[test]
    fn thread_cpu_counts_work_not_sleep() {
        let before = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let slept = thread_cpu_ns() - before;
        let work = |steps: u64| {
            let before = thread_cpu_ns();
            let mut x = 1u64;
            for _ in 0..steps {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            thread_cpu_ns() - before
        };
        let one = work(5_000_000);
        let four = work(20_000_000);
        assert!(slept < 5_000_000, "{slept}");
        assert!(four > 2 * one, "{one} {four}");
    }

    #[test]
    fn peaks_keep_the_largest_and_turns_restart() {
        let m = Meter::default();
        m.note_memory(10);
        m.note_memory(5);
        m.add_cpu(3_000_000);
        assert_eq!(m.turn_cpu_ms(), 3.0);
        m.turn_started();
        assert_eq!(m.turn_cpu_ms(), 0.0);
        let s = m.snapshot();
        assert_eq!((s.cpu_ms, s.peak_memory_bytes), (3.0, 10));
    }
}
