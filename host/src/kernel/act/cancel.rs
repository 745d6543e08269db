//! Awaiting an extension call under a cancellation token.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::runtime::{CallError, Extension};

/// How long a cancelled extension call may take to notice before it is
/// abandoned (its instance is then discarded). A guest computing is
/// interrupted at once through its deadline; this covers one blocked in
/// the host.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Await an extension call, stopping it if the token is cancelled. `None`
/// means cancelled. The call future is never dropped mid-call unless the
/// guest ignores cancellation past the grace period.
pub(crate) async fn cancellable<T>(
    cancel: &CancellationToken,
    ext: &Extension,
    call: impl std::future::Future<Output = Result<T, CallError>>,
) -> Option<Result<T, CallError>> {
    tokio::pin!(call);
    tokio::select! {
        r = &mut call => match r {
            Err(CallError::Cancelled { .. }) => None,
            r => Some(r),
        },
        _ = cancel.cancelled() => {
            ext.cancel();
            let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
            None
        }
    }
}

/// [`cancellable`] for a call that may compute for long (a tool). The
/// guest runs on the thread that awaits it, which cannot look at the token
/// until the guest yields (at an epoch tick, later on a loaded machine);
/// so the token also reaches the guest from whichever thread cancels it,
/// and a computing guest stops at its next loop iteration or call.
pub(crate) async fn cancellable_compute<T>(
    cancel: &CancellationToken,
    ext: &Arc<Extension>,
    call: impl std::future::Future<Output = Result<T, CallError>>,
) -> Option<Result<T, CallError>> {
    let stopper = ext.stopper();
    let token = cancel.clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        stopper.cancel();
    });
    let out = cancellable(cancel, ext, call).await;
    watcher.abort();
    out
}

/// The machine-readable code of a failed call.
pub(crate) fn call_error_code(e: &CallError) -> &'static str {
    match e {
        CallError::Timeout { .. } => "execution-timeout",
        CallError::Cancelled { .. } => "cancelled",
        CallError::MemoryLimit { .. } => "memory-limit",
        CallError::Trap { .. } => "extension-crashed",
        CallError::Guest { .. } => "guest-error",
        CallError::Instantiate { .. } | CallError::Unloadable { .. } => "extension-unavailable",
    }
}
