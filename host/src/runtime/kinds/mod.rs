//! Typed calls into each kind's exports, one file per kind. Each goes
//! through [`Extension::begin`] / [`Extension::finish`], so deadlines,
//! fault classification and instance restarts behave the same everywhere.

mod command;
mod context;
mod hook;
mod logger;
mod provider;
mod session_store;
mod state_machine;
mod tool;
mod ui;

pub use provider::ResponseStream;

/// Run one export call on the live instance.
///
/// `$call` is an expression using `$g` (the kind's typed exports) and
/// `$store`; it must produce `wasmtime::Result<Result<T, ExtError>>`.
macro_rules! guest_call {
    ($self:ident, $variant:ident, $func:literal, |$g:ident, $store:ident| $call:expr) => {{
        let mut live = $self.ready().await?;
        let (crate::runtime::extension::KindGuest::$variant($g), clock) =
            $self.begin(&mut live, $func)?
        else {
            return Err($self.wrong_kind($func));
        };
        let outcome = match live.as_mut() {
            Some(inst) => {
                let $store = &mut inst.store;
                // The call's own result and its watchdog's, in one.
                $self
                    .watched(clock, async { $call.map(Ok) })
                    .await
                    .and_then(|r| r)
            }
            None => return Err($self.wrong_kind($func)),
        };
        $self.finish(&mut live, $func, outcome)
    }};
}

pub(crate) use guest_call;

/// Wrap an export that cannot return a guest error.
pub(crate) fn infallible<T>(
    r: wasmtime::Result<T>,
) -> wasmtime::Result<Result<T, crate::runtime::services::ExtError>> {
    r.map(Ok)
}
