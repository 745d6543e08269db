//! The kernel: the message loop and its stage boundaries, hook slots, the
//! tool-approval authority stack, the event bus and the interaction
//! protocol. Extensions attach only through the runtime's typed calls.

pub(crate) mod act;
pub mod agents;
pub mod authority;
pub mod capabilities;
pub mod commands;
pub mod compaction;
pub mod context;
pub mod conversation;
pub mod editor_files;
pub mod events;
pub mod extension_set;
pub mod first_request;
pub mod front_door;
pub mod held_output;
pub mod hooks;
pub mod interaction;
pub mod launch;
pub mod manifest_writer;
pub mod mcp_hub;
mod mcp_input;
pub mod named;
pub mod payloads;
pub mod persist;
pub mod redact;
pub mod reload;
pub mod response_limits;
pub mod retry;
pub mod roster;
mod scope_defaults;
pub mod screen_ui;
pub mod services;
pub mod session;
pub mod session_control;
pub mod session_lock;
pub mod snapshot;
pub mod steering;
pub mod tools;
pub mod turn;
pub mod usage;
pub mod workflow;

pub use authority::{AllowPattern, Authority, Callee, Mode};
pub use events::{Bus, Event, Subscriber};
pub use interaction::Interactions;
pub use launch::{LaunchOptions, Launched, launch};
pub use roster::SessionError;
pub use services::{KernelServices, TerminalOut};
pub use session::{Session, SessionConfig};
pub use turn::{TurnOutcome, TurnStatus};
