//! Builds the test fixture components (`tests/fixtures/`) for
//! `wasm32-wasip2` into a target dir of their own. They would share no
//! compiled dependency with the bundled extensions' `target/wasm` (other
//! features, profile and flags), and a shared dir would make this build
//! wait on cargo's lock whenever CI's rebuild of the bundled extensions
//! holds it (issue 42).

#[path = "../stud-bundled/wasm_build.rs"]
mod wasm_build;

use std::env;
use std::path::PathBuf;

use wasm_build::{WASM_TARGET, build_workspace, ensure_wasm_target};

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("crates/stud-fixtures is two folders down")
        .to_path_buf();
    let wasm_target_dir = root.join("target").join("wasm-fixtures");
    let fixtures = root.join("tests").join("fixtures");
    for watched in [
        "wit",
        "sdk/src",
        "sdk/macros/src",
        "crates/stud-bundled/wasm_build.rs",
        "sdk/Cargo.toml",
        "sdk/protocol",
        "tests/fixtures",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=STUD_SKIP_WASM_BUILD");
    // CI names clippy's driver here, and the fixtures are linted while
    // they build (their bytes are compared with nothing).
    println!("cargo:rerun-if-env-changed=STUD_FIXTURES_CLIPPY");
    if env::var_os("STUD_SKIP_WASM_BUILD").is_none() {
        ensure_wasm_target();
        let lint = env::var_os("STUD_FIXTURES_CLIPPY").map(PathBuf::from);
        build_workspace(&root, &fixtures, &wasm_target_dir, lint.as_deref())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "cargo:rustc-env=STUD_FIXTURES_WASM_OUT={}",
        wasm_target_dir.join(WASM_TARGET).join("release").display()
    );
    println!("cargo:rustc-env=STUD_FIXTURES_DIR={}", fixtures.display());
}
