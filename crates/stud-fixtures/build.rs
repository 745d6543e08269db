//! Builds the test fixture components (`tests/fixtures/`) for
//! `wasm32-wasip2` into the same target dir as the bundled extensions
//! (their dependencies are compiled once for both).

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
    let wasm_target_dir = root.join("target").join("wasm");
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
    if env::var_os("STUD_SKIP_WASM_BUILD").is_none() {
        ensure_wasm_target();
        build_workspace(&root, &fixtures, &wasm_target_dir).unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "cargo:rustc-env=STUD_FIXTURES_WASM_OUT={}",
        wasm_target_dir.join(WASM_TARGET).join("release").display()
    );
    println!("cargo:rustc-env=STUD_FIXTURES_DIR={}", fixtures.display());
}
