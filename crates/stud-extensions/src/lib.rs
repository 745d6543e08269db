//! Extensions as the user has them: discovered in their scopes, installed
//! from folders, archives and indexes, pinned and signed, reviewed when a
//! project brings them, and loaded into the runtime with their grants.

pub mod extensions;

// The layers below, under the names the modules use.
pub use stud_bundled as bundled;
pub use stud_config::{config, manifest, paths, protected_paths};
pub use stud_runtime::runtime;
pub use stud_vocab::{atomic_write, contract, digest, mode, scope};
