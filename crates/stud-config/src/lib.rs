//! stud's data layer: what an extension's manifest says, what the settings
//! files say and which scope may say it, where the stud home keeps things,
//! and which project files no extension may open. Pure data: no wasmtime,
//! no kernel; the layers above read it.

pub mod config;
pub mod manifest;
pub mod paths;
pub mod protected_paths;

// The words of the layer below, under the names the modules use.
pub use stud_vocab::{atomic_write, contract, digest, mode, scope};
