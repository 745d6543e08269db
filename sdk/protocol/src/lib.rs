//! What stud's kernel and its extensions (through `stud-sdk`) share
//! beyond the WIT contract: rules both sides must apply the same way.

pub mod events;
pub mod hook_payloads;
pub mod replay_trace;
pub mod session_manifest;
pub mod session_records;
pub mod session_view;
pub mod terminal;
pub mod text;
pub mod text_enum;
pub mod words;

/// The contract (`stud:extension` WIT package) version the SDK builds
/// for and the host speaks at most: one definition for both sides.
pub const CONTRACT_VERSION: &str = "0.1.4";

/// Name of the custom section that carries [`CONTRACT_VERSION`].
pub const CONTRACT_SECTION: &str = "stud:contract-version";

/// The largest file the host hands a component with its bytes (the
/// `files` import's walk).
pub const MAX_FILE_BYTES: u64 = 16 << 20;
