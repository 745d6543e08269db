//! # stud-sdk
//!
//! Write [stud](https://example.invalid/stud) extensions in Rust. An extension
//! is a WebAssembly component (`wasm32-wasip2`) of exactly one kind: provider,
//! tool, hook, ui, logger, context provider, state machine, command or
//! session store. Implement the kind's trait on a `Default` type and register
//! it with the kind's macro:
//!
//! ```no_run
//! use stud_sdk::prelude::*;
//!
//! #[derive(Default)]
//! struct Echo;
//!
//! impl Tool for Echo {
//!     fn spec(&self) -> ToolSpec {
//!         ToolSpec::new("echo", "Repeat the given text")
//!             .param("text", "string", "What to repeat", true)
//!     }
//!
//!     fn invoke(&mut self, _call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
//!         Ok(ToolOutput::text(args.str("text")?))
//!     }
//! }
//!
//! stud_sdk::export_tool!(Echo);
//! ```
//!
//! Host services (logging, the state slot, config, events, HTTP, processes,
//! interaction) are plain functions in [`host`]. Which of them work depends on
//! the capabilities the manifest asks for and the user grants.
//!
//! The SDK stamps [`CONTRACT_VERSION`] into the component so the host can
//! refuse an incompatible build before instantiating it.

#![warn(missing_docs)]

#[doc(hidden)]
#[allow(missing_docs)]
pub mod __private;
pub mod error;
mod export;
pub mod files;
pub mod fs;
pub mod host;
pub mod kinds;
pub mod llm_http;
pub mod llm_parts;
pub mod sse;
pub mod text;
/// Text for a person's terminal: [`terminal::safe`] makes model and tool
/// output inert before a UI shows it.
pub use stud_protocol::{
    events, hook_payloads, session_manifest, session_records, session_view, terminal,
};

pub use error::Error;
pub use kinds::command::{Command, CommandArgs, CommandOutput, CommandSpec};
pub use kinds::context::{ComposeContext, ContextProvider, Fragment, FragmentKind};
pub use kinds::hook::{Hook, HookOutcome, slot_text};
pub use kinds::logger::Logger;
pub use kinds::provider::{
    EventStream, ModelCapabilities, ModelConfig, ModelInfo, Provider, ProviderRequest, StreamEvent,
    models_from_config,
};
pub use kinds::session_store::{SessionData, SessionStore, SessionSummary};
pub use kinds::state_machine::StateMachine;
pub use kinds::tool::{Args, CallContext, Tool, ToolOutput, ToolSpec};
pub use kinds::ui::{Screen, Ui, UiAction};
pub use serde_json::{Value, json};

/// The contract (`stud:extension` WIT package) version this SDK builds for.
pub use stud_protocol::CONTRACT_VERSION;

/// Name of the custom section that carries [`CONTRACT_VERSION`].
pub use stud_protocol::CONTRACT_SECTION;

/// Generated bindings of every host import and shared type, for when the
/// ergonomic wrappers are not enough.
#[allow(missing_docs)]
pub mod wit {
    wit_bindgen::generate!({
        path: "../wit/since_v0.1.4",
        world: "all-imports",
        generate_all,
    });
}

/// Everything an extension usually needs, in one `use`.
pub mod prelude {
    pub use crate::host;
    pub use crate::wit::stud::extension::types::{
        ContentPart, ErrorClass, Event, HookKind, HookSlot, Image, ImageSource, Message, Phase,
        ResultPart, Role, Stage, ToolCall, Usage,
    };
    pub use crate::{
        Args, CallContext, Command, CommandArgs, CommandOutput, CommandSpec, ComposeContext,
        ContextProvider, Error, EventStream, Fragment, FragmentKind, Hook, HookOutcome, Logger,
        ModelCapabilities, ModelInfo, Provider, ProviderRequest, SessionData, SessionStore,
        SessionSummary, StateMachine, StreamEvent, Tool, ToolOutput, ToolSpec, Ui, Value, json,
        slot_text,
    };
}
