//! The contract versions this host speaks. Kept as data so the supported
//! range is testable and shown in errors.

use semver::{Version, VersionReq};

/// The `stud:extension` WIT package version the host's bindings are
/// generated from (`wit/since_v0.1.0`).
pub const HOST_CONTRACT: Version = Version::new(0, 1, 0);

/// The WIT package whose interfaces extensions import and export.
pub const PACKAGE: &str = "stud:extension";

/// Contract versions whose components this host loads: the same 0.x minor
/// (0.x minors are breaking under semver). An adapter for an older frozen
/// version widens this range.
pub fn supported() -> VersionReq {
    VersionReq::parse(">=0.1.0, <0.2.0").expect("static version range")
}

/// The supported range for people: `0.1.x`.
pub fn supported_text() -> String {
    format!("{}.{}.x", HOST_CONTRACT.major, HOST_CONTRACT.minor)
}

pub fn is_supported(version: &Version) -> bool {
    supported().matches(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_version_is_inside_the_supported_range() {
        let sdk = Version::parse(stud_sdk_contract()).expect("sdk contract version parses");
        assert!(
            is_supported(&sdk),
            "SDK contract {sdk} outside {}",
            supported()
        );
        assert!(is_supported(&HOST_CONTRACT));
        assert!(!is_supported(&Version::new(0, 2, 0)));
        assert!(!is_supported(&Version::new(1, 0, 0)));
    }

    /// The SDK's version, read from its source so the host does not link
    /// the guest crate.
    fn stud_sdk_contract() -> &'static str {
        let src = include_str!("../../sdk/src/lib.rs");
        src.lines()
            .find_map(|l| l.strip_prefix("pub const CONTRACT_VERSION: &str = \""))
            .and_then(|rest| rest.strip_suffix("\";"))
            .expect("sdk/src/lib.rs declares CONTRACT_VERSION")
    }
}
