//! Whose extension signatures count and what installs unsigned: the
//! user's global settings say, `extensions::signing` checks.

use serde::{Deserialize, Serialize};

/// A publisher the user trusts: a name to show and a minisign public key
/// (the base64 line of a `.pub` file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedPublisher {
    pub name: String,
    pub key: String,
}

/// Which extensions install.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignaturePolicy {
    /// Unsigned ones and ones signed by a key not trusted install (the
    /// consent text says so); a signature that does not verify never does.
    #[default]
    Any,
    /// Only archives signed by a trusted publisher.
    Trusted,
}
