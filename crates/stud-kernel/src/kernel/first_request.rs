//! The moment a headless session's first provider request is out. Work
//! that request does not need (linking hooks that act only at later
//! stages, the loggers' first writes) waits for it: on a small machine it
//! would otherwise take CPU from the start the person waits for
//! (docs/benchmarks.md, issue 18).

use std::sync::Arc;

use tokio::sync::watch;

/// A one-way latch: closed until the first request is sent (or the
/// session ends without one), open for good after. Clones share it.
#[derive(Clone, Debug)]
pub struct FirstRequest {
    sent: Arc<watch::Sender<bool>>,
}

impl FirstRequest {
    /// Closed: deferred work waits for [`open`](Self::open).
    pub fn closed() -> Self {
        FirstRequest {
            sent: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Open already: nothing waits (an interactive session, whose person
    /// types while the rest links, and child sessions).
    pub fn open_now() -> Self {
        FirstRequest {
            sent: Arc::new(watch::Sender::new(true)),
        }
    }

    /// The request is out, or none is coming: let deferred work run.
    pub fn open(&self) {
        self.sent
            .send_if_modified(|sent| !std::mem::replace(sent, true));
    }

    /// Wait until [`open`](Self::open) was called (at once if it was).
    pub async fn wait(&self) {
        let mut seen = self.sent.subscribe();
        // The sender lives in `self`, so the channel cannot close here.
        let _ = seen.wait_for(|sent| *sent).await;
    }
}

impl Default for FirstRequest {
    fn default() -> Self {
        FirstRequest::open_now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_go_on_once_it_opens_and_later_ones_do_not_wait() {
        let gate = FirstRequest::closed();
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "it waited while closed");
        gate.open();
        waiting.await.expect("the waiter ends");
        gate.open();
        gate.wait().await;
    }

    #[tokio::test]
    async fn the_default_is_open() {
        FirstRequest::default().wait().await;
    }
}
