//! Getting a call out of a blocking system call. Guest file system calls
//! run inline on the thread that runs the guest (fast: no thread hop per
//! call or per file operation), so a guest that opens a FIFO nobody
//! writes to blocks that thread in the kernel, where neither the epoch
//! check nor any timer of the same task can reach it. Every call in
//! progress is registered here with its thread; the epoch ticker looks at
//! them each tick and sends an overdue or cancelled one's thread a signal
//! (`SIGUSR2`, with a handler that does nothing and without `SA_RESTART`),
//! so the blocked system call returns `EINTR`: the guest gets an error
//! back, runs guest code again, and the epoch check stops it.

use std::sync::{Arc, Mutex, Once};

use super::cancel::CancelFlag;
use super::host_state::DeadlineClock;

/// Where a call's current clock and cancellation flag are kept: read at
/// every tick, as the call moves from instantiation to the call itself.
pub type ClockCell = Arc<Mutex<Arc<DeadlineClock>>>;
pub type CancelCell = Arc<Mutex<CancelFlag>>;

#[derive(Clone)]
struct InFlight {
    id: u64,
    clock: ClockCell,
    cancel: CancelCell,
    #[cfg(unix)]
    thread: libc::pthread_t,
}

static IN_FLIGHT: Mutex<Vec<InFlight>> = Mutex::new(Vec::new());
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A call registered on the current thread; deregistered when dropped.
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        let mut calls = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
        calls.retain(|c| c.id != self.0);
    }
}

/// Register a call about to run on the current thread.
pub fn register(clock: ClockCell, cancel: CancelCell) -> Registered {
    install_handler();
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let entry = InFlight {
        id,
        clock,
        cancel,
        // SAFETY: pthread_self has no preconditions.
        #[cfg(unix)]
        thread: unsafe { libc::pthread_self() },
    };
    IN_FLIGHT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(entry);
    Registered(id)
}

/// Signal the threads of calls that are overdue or cancelled (the epoch
/// ticker calls this every tick).
pub fn nudge_overdue() {
    let calls = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
    for call in calls.iter() {
        let overdue = call
            .clock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remaining()
            .is_some_and(|left| left.is_zero());
        let cancelled = call
            .cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_cancelled();
        if overdue || cancelled {
            // The lock is held: the call cannot deregister, so its thread
            // is the live thread running it.
            #[cfg(unix)]
            // SAFETY: the thread is alive (see above); the signal's
            // handler does nothing.
            unsafe {
                libc::pthread_kill(call.thread, libc::SIGUSR2);
            }
        }
    }
}

#[cfg(unix)]
extern "C" fn nothing(_: libc::c_int) {}

fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(unix)]
        // SAFETY: a handler that does nothing is async-signal-safe; no
        // SA_RESTART, so a blocked system call returns EINTR.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = nothing as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = 0;
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut());
        }
    });
}
