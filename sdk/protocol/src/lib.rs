//! What stud's kernel and its extensions (through `stud-sdk`) share
//! beyond the WIT contract: rules both sides must apply the same way.

pub mod events;
pub mod hook_payloads;
pub mod replay_trace;
pub mod session_manifest;
pub mod session_records;
pub mod session_view;
pub mod terminal;
pub mod text_enum;
pub mod words;
