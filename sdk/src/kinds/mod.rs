//! One module per extension kind: the trait an author implements and the
//! glue the export macro calls.

pub mod command;
pub mod context;
pub mod hook;
pub mod logger;
pub mod provider;
pub mod session_store;
pub mod state_machine;
pub mod tool;
pub mod ui;
