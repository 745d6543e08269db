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

/// Build the workspace in `dir` for `wasm32-wasip2` into `target_dir`.
///
/// Paths are remapped (`root` to `/stud`, the cargo home to `/cargo`):
/// panic locations name source files, and without the remap a component
/// would carry the builder's folders, so the same sources would build to
/// different bytes on each machine and the prebuilt components could not
/// be checked against them (`prebuilt.rs`).
pub fn build_workspace(root: &Path, dir: &Path, target_dir: &Path) -> Result<(), String> {
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
    cmd.env("CARGO_ENCODED_RUSTFLAGS", remap_flags(root));
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run cargo for {}: {e}", dir.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "building the components in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// `--remap-path-prefix` for the repository and the cargo home, as
/// `CARGO_ENCODED_RUSTFLAGS` (flags separated by 0x1f). The cargo home
/// comes last: rustc applies the last matching prefix, and a cargo home
/// inside the repository must still map to `/cargo`.
fn remap_flags(root: &Path) -> String {
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let mut flags = vec![format!("--remap-path-prefix={}=/stud", root.display())];
    if let Some(home) = cargo_home {
        flags.push(format!("--remap-path-prefix={}=/cargo", home.display()));
    }
    flags.join("\u{1f}")
}
