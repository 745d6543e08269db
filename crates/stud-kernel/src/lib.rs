//! stud's kernel: the message loop and its stage boundaries, the hook
//! slots around them, the tool-call authority stack, sessions and their
//! persistence, the event bus, the MCP client, and the screen a
//! full-screen UI draws on. Extensions reach it only through the runtime.

pub mod kernel;
pub mod mcp;
pub mod tty;

// The layers below, under the names the modules use.
pub use stud_bundled as bundled;
pub use stud_config::{config, manifest, paths, protected_paths};
pub use stud_extensions::extensions;
pub use stud_runtime::runtime;
pub use stud_vocab::{atomic_write, contract, digest, mode, scope};
