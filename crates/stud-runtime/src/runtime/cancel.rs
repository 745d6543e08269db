//! The cancellation flag of one extension call. The guest sees it at the
//! next epoch tick; a host import waiting on the network or a process is
//! woken at once instead of polling.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    set: AtomicBool,
    notify: Notify,
}

impl CancelFlag {
    pub fn cancel(&self) {
        self.0.set.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// The same flag (not a copy's state): a lane's flag is replaced for
    /// every call.
    pub fn same(&self, other: &CancelFlag) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.set.load(Ordering::SeqCst)
    }

    /// Resolves once [`cancel`](Self::cancel) was called.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static {
        let inner = self.0.clone();
        async move {
            loop {
                // Registered before the check, so a cancel in between is
                // not missed (`notify_waiters` reaches created futures).
                let notified = inner.notify.notified();
                if inner.set.load(Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_wakes_when_cancelled() {
        let flag = CancelFlag::default();
        let waiting = tokio::spawn(flag.cancelled());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        flag.cancel();
        waiting.await.unwrap();
        assert!(flag.is_cancelled());
        // Already cancelled: resolves without waiting.
        flag.cancelled().await;
    }
}
