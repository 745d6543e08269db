//! Settings. For now one file, `$STUD_HOME/settings.json`; scopes,
//! provenance and project settings come with the extension-lifecycle work.

mod settings;

pub use settings::{Retries, SecretRef, Settings, SettingsError};
