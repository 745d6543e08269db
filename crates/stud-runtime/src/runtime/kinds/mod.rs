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
pub use tool::{KnownSpec, SpecSource, tool_spec_from_json, tool_spec_to_json};

/// Run one export call on the live instance.
///
/// `$call` is an expression using `$g` (the kind's typed exports) and
/// `$store`; it must produce `wasmtime::Result<Result<T, ExtError>>`. It
/// runs on the call's own thread, so what it uses must be owned (moved in).
macro_rules! guest_call {
    ($self:ident, $variant:ident, $func:literal, |$g:ident, $store:ident| $call:expr) => {{
        $self
            .run_call($func, move |inst| {
                Box::pin(async move {
                    let crate::runtime::extension::KindGuest::$variant($g) = inst.guest.clone()
                    else {
                        return Ok(Err(crate::runtime::extension::wrong_kind_error($func)));
                    };
                    let $store = &mut inst.store;
                    $call
                })
            })
            .await
    }};
}

pub(crate) use guest_call;

/// Wrap an export that cannot return a guest error.
pub(crate) fn infallible<T>(
    r: wasmtime::Result<T>,
) -> wasmtime::Result<Result<T, crate::runtime::services::ExtError>> {
    r.map(Ok)
}
