//! Linking ahead: what the first turn calls is compiled while the session
//! starts.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::kernel::first_request::FirstRequest;
use crate::manifest::{HookKind, HookSlot, Kind, Phase, Stage};
use crate::runtime::Extension;

/// Link, in the background, what the start and the first turn surely
/// call after the session store, in the order they call them, so the
/// links overlap one another and the store's start. Called as soon as the
/// extensions are loaded: the session store is started next (its caller
/// links it), then the provider lists its models, RECEIVE_INPUT's hooks
/// run and the context providers compose the request. Tools, state
/// machines and the providers not chosen are linked at their first call:
/// a tool's spec is cached. A context provider whose `[context]
/// when-config` its config leaves empty is never called, so never linked.
///
/// `provider` is the one flags, profile and settings name; a resumed
/// session may switch to another, which [`prelink_rest`] then links.
/// Linking runs no guest code, so one linked in vain costs only the CPU.
pub(super) fn prelink_start(exts: &[Arc<Extension>], provider: &str) {
    let of = |k: Kind| exts.iter().filter(move |e| e.kind() == k);
    let chosen = of(Kind::Provider).filter(|e| e.id().as_str() == provider);
    let hooks_before = of(Kind::Hook).filter(|e| holds_up_first_request(e));
    // The store is left to the caller, which starts it right after this
    // on a task of its own that links it: waiting on a lane for it cost
    // the start the lane's wake-up and, on 2 cores, a second lane queued
    // behind the first on one core while the other idled (a scheduler
    // trace, docs/benchmarks.md). The lanes take the rest, one fewer than
    // the cores: the store's task keeps one busy.
    let soon: VecDeque<Arc<Extension>> = chosen
        .chain(hooks_before)
        .chain(
            exts.iter()
                .filter(|e| e.provides_context() && e.finds_context()),
        )
        .cloned()
        .collect();
    let lanes = crate::runtime::cores::cores().saturating_sub(1).max(1);
    link_in_order(soon, lanes, tracing::Span::current());
}

/// Link what [`prelink_start`] could not know: the provider the session
/// settled on (when it is another) and the UIs that render it.
///
/// What the first request does not need (loggers, observers, hooks whose
/// slots all come after it) is linked once `first_request` opens: on 2
/// cores it would take CPU from the request (docs/benchmarks.md). The
/// guards and transforms among them go first: a tool call waits for them.
pub(super) fn prelink_rest(
    exts: &[Arc<Extension>],
    provider: &str,
    uis: &[Arc<Extension>],
    render: bool,
    first_request: &FirstRequest,
) {
    let of = |k: Kind| exts.iter().filter(move |e| e.kind() == k);
    let soon: VecDeque<Arc<Extension>> = of(Kind::Provider)
        .filter(|e| e.id().as_str() == provider)
        .chain(uis.iter().filter(|_| render))
        .filter(|e| !e.is_linked())
        .cloned()
        .collect();
    // Guards and transforms first: the loop waits for them (a tool call
    // for its `tool-call.pre` hooks); loggers and observers only queue
    // events. A hook whose config attaches it nowhere is never called.
    let later_hooks = || of(Kind::Hook).filter(|e| !holds_up_first_request(e));
    let after: VecDeque<Arc<Extension>> = later_hooks()
        .filter(|e| waited_for(e))
        .chain(of(Kind::Logger))
        .chain(later_hooks().filter(|e| !waited_for(e) && !e.hooks().is_empty()))
        .cloned()
        .collect();
    let span = tracing::Span::current();
    let cores = crate::runtime::cores::cores();
    link_in_order(soon, cores, span.clone());
    let opened = first_request.clone();
    // No hurry after the request: one lane, beside the response.
    tokio::spawn(async move {
        opened.wait().await;
        link_in_order(after, 1, span);
    });
}

/// Link `queue` front first on up to `lanes` threads (each takes the next
/// one when it is done). Threads of their own, not tokio's blocking pool:
/// measured, the pool at times left the second lane and the provider's
/// first call queued behind the first lane's whole run. What another lane
/// already took on is left out: the provider queued at the start was
/// still linking when the session settled on it, and a second lane
/// started only to wait for the first (a thread before every first
/// request).
fn link_in_order(queue: VecDeque<Arc<Extension>>, lanes: usize, span: tracing::Span) {
    let queue: VecDeque<Arc<Extension>> = queue.into_iter().filter(|e| e.claim_link()).collect();
    let lanes = lanes.min(queue.len());
    if lanes == 0 {
        return;
    }
    let queue = Arc::new(std::sync::Mutex::new(queue));
    let mut started = 0;
    for _ in 0..lanes {
        let queue = queue.clone();
        let span = span.clone();
        let lane = move || {
            // A lane that panics gives up what it still had queued, so the
            // first calls link it (they wait for a claimed link).
            let _rest = GiveUpRest(queue.clone());
            span.in_scope(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                    let Some(ext) = next else { break };
                    let _ = ext.link_now();
                }
            })
        };
        if std::thread::Builder::new()
            .name("stud-link".into())
            .spawn(lane)
            .is_ok()
        {
            started += 1;
        }
    }
    // Without a thread the first call of each links it instead.
    if started == 0 {
        drop(GiveUpRest(queue));
    }
}

/// What is left in a lane's queue when the lane ends: nothing after a
/// whole run, the rest after a panic. Its claims are given up.
struct GiveUpRest(Arc<std::sync::Mutex<VecDeque<Arc<Extension>>>>);

impl Drop for GiveUpRest {
    fn drop(&mut self) {
        let rest: Vec<_> = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for ext in rest {
            ext.release_link_claim();
        }
    }
}

/// Whether the loop waits for it somewhere: a guard or a transform.
fn waited_for(hook: &Extension) -> bool {
    hook.hooks().iter().any(|h| h.kind != HookKind::Observer)
}

/// A guard or transform at or before SEND_REQUEST's `pre` runs (and is
/// waited for) before the first request goes out; observers never hold
/// up the loop.
fn holds_up_first_request(hook: &Extension) -> bool {
    let first_request = HookSlot::new(Stage::SendRequest, Phase::Pre);
    hook.hooks()
        .iter()
        .any(|h| h.kind != HookKind::Observer && h.slot <= first_request)
}
