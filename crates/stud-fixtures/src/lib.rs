//! Where the test fixture components are: their sources
//! (`tests/fixtures`) and the folder their build script put the built
//! `.wasm` files in. Only the tests and benches depend on this crate, so a
//! first `cargo run` builds the bundled extensions and not these.

/// Where the build script put the fixtures' components.
pub const WASM_OUT: &str = env!("STUD_FIXTURES_WASM_OUT");
/// The test fixtures' sources (`tests/fixtures`).
pub const FIXTURES_DIR: &str = env!("STUD_FIXTURES_DIR");
