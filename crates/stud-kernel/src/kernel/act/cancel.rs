//! Awaiting an extension call under a cancellation token.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::runtime::CallError;
use crate::runtime::extension::CallStop;

/// How long a cancelled extension call may take to notice before it is
/// abandoned (its instance is then discarded). A guest computing is
/// interrupted at once through its deadline; this covers one blocked in
/// the host.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Await an extension call, stopping it if the token is cancelled. `None`
/// means cancelled. The call future is never dropped mid-call unless the
/// guest ignores cancellation past the grace period.
///
/// The guest runs on the thread that awaits it, which cannot look at the
/// token while the guest computes (only when it yields at an epoch tick,
/// later on a loaded machine). So the token also reaches the guest
/// directly: a waker registered with it stops the call from whichever
/// thread cancels (the Ctrl-C handler's), and a computing guest stops at
/// its next loop iteration or call. A waker, not a task: waking one costs
/// nothing until the token is cancelled. The stop reaches this call only,
/// on whichever instance of the extension's pool it runs.
pub(crate) async fn cancellable<T>(
    cancel: &CancellationToken,
    call: impl Future<Output = Result<T, CallError>>,
) -> Option<Result<T, CallError>> {
    let stop = CallStop::default();
    let stopper = Waker::from(Arc::new(StopOnCancel(stop.clone())));
    let mut armed = std::pin::pin!(cancel.cancelled());
    // Registers the waker (or finds the token already cancelled, which
    // the select below sees as well).
    let _ = armed.as_mut().poll(&mut Context::from_waker(&stopper));
    let call = stop.clone().scope(call);
    tokio::pin!(call);
    tokio::select! {
        r = &mut call => match r {
            Err(CallError::Cancelled { .. }) => None,
            // The guest saw the cancel (the waker reached it) and answered
            // with an error of its own before this select saw the token:
            // the call was cancelled, it did not fail.
            Err(_) if cancel.is_cancelled() => None,
            r => Some(r),
        },
        _ = cancel.cancelled() => {
            stop.cancel();
            let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
            None
        }
    }
}

/// Stops an extension's call when woken by its token's cancellation.
struct StopOnCancel(CallStop);

impl Wake for StopOnCancel {
    fn wake(self: Arc<Self>) {
        self.0.cancel();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.cancel();
    }
}

/// The machine-readable code of a failed call.
pub(crate) fn call_error_code(e: &CallError) -> &'static str {
    match e {
        CallError::Timeout { .. } => "execution-timeout",
        CallError::Cancelled { .. } => "cancelled",
        CallError::MemoryLimit { .. } => "memory-limit",
        CallError::CpuBudget { .. } => "cpu-budget",
        CallError::Trap { .. } => "extension-crashed",
        CallError::Guest { .. } => "guest-error",
        CallError::Instantiate { .. } | CallError::Unloadable { .. } => "extension-unavailable",
    }
}
