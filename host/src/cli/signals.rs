//! The signals that ask a full-screen session to end (`kill`, a closed
//! terminal, `kill -INT`). In raw mode Ctrl-C is a key, not a signal, so
//! these come from outside; without a handler the process would die with
//! the terminal raw and on the alternate screen, and loggers unflushed.

/// Waits for a termination signal; made once per process.
pub struct EndSignals {
    #[cfg(unix)]
    streams: Vec<(i32, tokio::signal::unix::Signal)>,
}

impl EndSignals {
    /// Listen for SIGTERM, SIGHUP and SIGINT. A signal that cannot be
    /// listened for keeps its default action (the process ends as before).
    pub fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = [
                (15, SignalKind::terminate()),
                (1, SignalKind::hangup()),
                (2, SignalKind::interrupt()),
            ]
            .into_iter()
            .filter_map(|(n, kind)| signal(kind).ok().map(|s| (n, s)))
            .collect();
            EndSignals { streams }
        }
        #[cfg(not(unix))]
        EndSignals {}
    }

    /// The next one's number (SIGTERM is 15); never resolves without any.
    pub async fn recv(&mut self) -> i32 {
        #[cfg(unix)]
        {
            if self.streams.is_empty() {
                return std::future::pending().await;
            }
            let waits = self.streams.iter_mut().map(|(n, s)| {
                let n = *n;
                Box::pin(async move {
                    s.recv().await;
                    n
                })
            });
            futures::future::select_all(waits).await.0
        }
        #[cfg(not(unix))]
        std::future::pending().await
    }
}
