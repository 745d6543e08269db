//! Where a start's own CPU work runs while the caller waits for it.
//!
//! On a multi-threaded runtime early in a start, the workers have nothing
//! else to do: the work runs there, and no blocking thread is started for
//! it (each cost a start about half a millisecond of CPU here, issue 42,
//! docs/benchmarks.md). On a current-thread runtime (the sessions thread
//! of `stud acp`, which serves other sessions meanwhile) a task would hold
//! that one thread, so the work goes to the blocking pool as before.

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::task::JoinHandle;

/// Run `work` beside the caller: see the module's documentation.
pub fn spawn<R, F>(work: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match Handle::current().runtime_flavor() {
        RuntimeFlavor::CurrentThread => tokio::task::spawn_blocking(work),
        _ => tokio::spawn(async move { work() }),
    }
}

#[cfg(test)]
mod tests {
    /// Work on a current-thread runtime does not hold its one thread: a
    /// task of the runtime runs while the work waits.
    #[test]
    fn on_a_current_thread_runtime_the_work_leaves_the_thread_free() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let work = super::spawn(move || rx.recv_timeout(std::time::Duration::from_secs(5)));
            // Runs only if the thread is free while the work blocks.
            tokio::spawn(async move { tx.send(()) })
                .await
                .expect("task")
                .expect("sent");
            assert!(
                work.await.expect("work").is_ok(),
                "the work got the message"
            );
        });
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_multi_threaded_runtime_the_work_runs_and_answers() {
        assert_eq!(super::spawn(|| 40 + 2).await.expect("work"), 42);
    }
}
