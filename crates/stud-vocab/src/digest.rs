//! Content digests, always written with their algorithm (`sha256:<hex>`).

use std::fmt;

use sha2::{Digest as _, Sha256};

/// A sha256 digest of some bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    pub fn of(bytes: &[u8]) -> Self {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    /// The digest of what was fed to `hasher` (hashing while streaming).
    pub fn finish(hasher: Sha256) -> Self {
        Sha256Digest(hasher.finalize().into())
    }

    /// Lowercase hex without the prefix.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 12 hex characters, for listings.
    pub fn short(&self) -> String {
        self.hex()[..12].to_string()
    }

    /// Parse `sha256:<hex>` or bare hex.
    pub fn parse(text: &str) -> Option<Self> {
        let hex_part = text.strip_prefix("sha256:").unwrap_or(text);
        let bytes = hex::decode(hex_part).ok()?;
        Some(Sha256Digest(bytes.try_into().ok()?))
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest_and_round_trip() {
        let d = Sha256Digest::of(b"abc");
        assert_eq!(
            d.hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Sha256Digest::parse(&d.to_string()), Some(d.clone()));
        assert_eq!(d.short().len(), 12);
        assert_eq!(Sha256Digest::parse("sha256:zz"), None);
    }
}
