//! stud's component runtime: one wasmtime engine, compiled code cached and
//! authenticated, a linker per world and grant set, and the host side of
//! every capability an extension can be granted. It knows manifests and
//! grants (`stud-config`), never the kernel that drives it.

pub mod runtime;

// The layers below, under the names the modules use.
pub use stud_bundled as bundled;
pub use stud_config::{config, manifest, paths, protected_paths};
pub use stud_vocab::{atomic_write, contract, digest, mode, scope};
