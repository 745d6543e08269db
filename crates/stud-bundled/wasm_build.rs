//! Building a workspace of components for `wasm32-wasip2` from a build
//! script (shared by `stud-bundled` and `stud-fixtures`, which include
//! this file).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const WASM_TARGET: &str = "wasm32-wasip2";

/// Install the wasm target with rustup when it is missing.
pub fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc).args(["--print", "sysroot"]).output();
    if let Ok(out) = sysroot {
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
            .join("lib/rustlib")
            .join(WASM_TARGET);
        if path.exists() {
            return;
        }
    }
    println!(
        "cargo:warning=installing the {WASM_TARGET} target with rustup (needed to build the bundled extensions)"
    );
    let status = Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status();
    match status {
        Ok(s) if s.success() => {}
        _ => panic!(
            "the {WASM_TARGET} target is missing and `rustup target add {WASM_TARGET}` failed; install it and build again"
        ),
    }
}

pub fn build_workspace(dir: &Path, target_dir: &Path) {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args([
            "build",
            "--release",
            "--workspace",
            "--target",
            WASM_TARGET,
            "--target-dir",
        ])
        .arg(target_dir);
    // Flags meant for the host build must not leak into the wasm build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo for {}: {e}", dir.display()));
    if !output.status.success() {
        panic!(
            "building the components in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
