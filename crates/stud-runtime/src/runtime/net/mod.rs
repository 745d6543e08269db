//! Outbound network for extensions: the per-extension grant
//! ([`NetPolicy`]), a resolver that refuses private addresses to names not
//! granted exactly, and the HTTP client that uses both. Components never
//! open sockets themselves (WASI sockets are off); every request goes
//! through the `http` host import and these checks.

mod address;
mod client;
mod limits;
mod policy;

pub use address::is_internal;
pub use client::build_client;
pub use limits::NetLimits;
pub use policy::{NetDenied, NetPolicy, without_query};
