//! stud: an agent runtime whose kernel is a WebAssembly plugin host. This
//! crate is the front door (the command line, the editor's protocol, the
//! diagnostics switch); the layers live in their own crates under
//! `crates/`, each depending only on those below it:
//!
//! `stud-vocab` < `stud-config` < `stud-runtime` (with `stud-bundled`) <
//! `stud-extensions` < `stud-kernel` < `stud`.

pub mod acp;
pub mod cli;
pub mod diagnostics;

// The layers, under the names the modules, the tests and the benches use.
pub use stud_bundled as bundled;
pub use stud_bundled::sdk_kit;
pub use stud_config::{config, manifest, paths, protected_paths};
pub use stud_extensions::extensions;
pub use stud_kernel::{kernel, mcp, tty};
pub use stud_runtime::runtime;
pub use stud_vocab::{atomic_write, contract, digest, mode, scope};
