//! The contract versions this host speaks. Kept as data so the supported
//! range is testable and shown in errors.

use semver::{Version, VersionReq};

/// The `stud:extension` WIT package version the host's bindings are
/// generated from (`wit/since_v0.1.4`). 0.1.1 added the `session` import
/// for commands, 0.1.2 the `files` import for tools, 0.1.3 path completion,
/// input history and the editor to `terminal`, 0.1.4 the `socket` import
/// for tools and session stores; older components link against it
/// unchanged (wasmtime matches `@0.1.0` to `@0.1.3` names to `@0.1.4`
/// definitions).
pub const HOST_CONTRACT: Version = Version::new(0, 1, 4);

/// The WIT package whose interfaces extensions import and export.
pub const PACKAGE: &str = "stud:extension";

/// Contract versions whose components this host loads: the same 0.x minor
/// (0.x minors are breaking under semver), up to the host's own patch: a
/// component built for a later 0.1.x may import what this host lacks. An
/// adapter for an older frozen version widens this range.
pub fn supported() -> VersionReq {
    VersionReq::parse(&format!(">=0.1.0, <={HOST_CONTRACT}")).expect("static version range")
}

/// The supported range for people: `0.1.0 to 0.1.4`.
pub fn supported_text() -> String {
    format!("0.1.0 to {HOST_CONTRACT}")
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
        assert!(
            is_supported(&Version::new(0, 1, 0)),
            "0.1.0 components keep loading"
        );
        assert!(is_supported(&Version::new(0, 1, 1)));
        assert!(is_supported(&Version::new(0, 1, 2)));
        assert!(is_supported(&Version::new(0, 1, 3)));
        assert!(!is_supported(&Version::new(0, 1, 5)));
        assert!(!is_supported(&Version::new(0, 2, 0)));
        assert!(!is_supported(&Version::new(1, 0, 0)));
    }

    /// The SDK's version (stud-protocol's), read from its source so this
    /// crate stays free of dependencies.
    fn stud_sdk_contract() -> &'static str {
        let src = include_str!("../../../sdk/protocol/src/lib.rs");
        src.lines()
            .find_map(|l| l.strip_prefix("pub const CONTRACT_VERSION: &str = \""))
            .and_then(|rest| rest.strip_suffix("\";"))
            .expect("sdk/protocol/src/lib.rs declares CONTRACT_VERSION")
    }
}
