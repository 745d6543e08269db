//! The bottom layer of stud: words every other layer uses and nothing
//! stud-specific below them (no manifests, no wasmtime, no kernel). Keeping
//! them here lets the layers above depend on each other only downwards.

pub mod atomic_write;
pub mod contract;
pub mod digest;
pub mod mode;
pub mod scope;
