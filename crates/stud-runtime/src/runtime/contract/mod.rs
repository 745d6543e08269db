//! The contract versions this host speaks, one module each, as Zed does
//! with `since_vX`: each holds the `bindgen!` output of its WIT. Generated
//! types stop here and in the runtime code that calls guests (`kinds`,
//! `caps`); the kernel and the front ends name the types of
//! [`super::domain`].
//!
//! Contract 0.1.x is one module: its minor versions only add (an import,
//! an optional export), so the newest WIT binds the older components too.
//! A breaking version adds a module beside this one; `domain` then names
//! that version's types, and the older module converts its values into
//! them where its kinds call guests, so the loop never sees two shapes.
//! `tests/layers.rs` fails when a file outside the runtime names a module
//! here.

pub mod v0_1;
