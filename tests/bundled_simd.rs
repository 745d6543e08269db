//! The search tools are built with wasm SIMD (`plugins/.cargo/config.toml`:
//! memchr and the regex engines then search 16 bytes at a time, which is
//! what keeps `grep` within 2x of ripgrep). The flag comes from the plugins'
//! cargo config, so a build that replaced the config's `rustflags` (an
//! environment variable does) would quietly drop it: the components the
//! binary embeds are checked, whether prebuilt or built from source.

use wasmparser::{Validator, WasmFeatures};

fn embedded(id: &str) -> &'static [u8] {
    stud::bundled::BUNDLED
        .iter()
        .find(|b| b.id == id)
        .unwrap_or_else(|| panic!("no bundled {id}"))
        .component
}

/// Valid with every feature the engine has, and not without SIMD: so the
/// code uses it.
fn uses_simd(bytes: &[u8]) -> bool {
    let all = WasmFeatures::default();
    Validator::new_with_features(all)
        .validate_all(bytes)
        .expect("a valid component");
    let mut without = all;
    without.remove(WasmFeatures::SIMD | WasmFeatures::RELAXED_SIMD);
    Validator::new_with_features(without)
        .validate_all(bytes)
        .is_err()
}

#[test]
fn the_search_tools_are_built_with_wasm_simd() {
    for id in ["grep", "glob"] {
        assert!(
            uses_simd(embedded(id)),
            "bundled {id} has no SIMD code: was plugins/.cargo/config.toml's `+simd128` left out of the build?"
        );
    }
}
