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

/// Build the workspace in `dir` for `wasm32-wasip2` into `target_dir`,
/// with its lockfile as it is (`--locked`: a build that re-resolved would
/// no longer be the one the sources describe).
///
/// Paths are remapped (`root` to `/stud`, the cargo home to `/cargo`):
/// panic locations name source files, and without the remap a component
/// would carry the builder's folders, so the same sources would build to
/// different bytes on each machine and the prebuilt components could not
/// be checked against them (`prebuilt.rs`). The remap goes in through
/// `--config`, which adds to the workspace's own `rustflags` (the
/// plugins' `.cargo/config.toml` turns on wasm SIMD); a `RUSTFLAGS`-like
/// variable would replace them.
///
/// With `lint`, clippy's driver compiles the workspace's own crates, so
/// the build lints them as it goes (`-D warnings`) instead of a separate
/// `cargo clippy` checking every dependency again. Only for components
/// whose bytes nobody compares: cargo hashes the wrapper's path into the
/// crates' identity, and clippy turns MIR optimizations off, so the same
/// sources build to other bytes.
pub fn build_workspace(
    root: &Path,
    dir: &Path,
    target_dir: &Path,
    lint: Option<&Path>,
) -> Result<(), String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args([
            "build",
            "--release",
            "--locked",
            "--workspace",
            "--target",
            WASM_TARGET,
            "--config",
        ])
        .arg(remap_config(root)?)
        .arg("--target-dir")
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
        "CLIPPY_ARGS",
    ] {
        cmd.env_remove(var);
    }
    if let Some(driver) = lint {
        let driver = driver.to_str().ok_or_else(|| {
            format!(
                "the clippy driver's path is not UTF-8: {}",
                driver.display()
            )
        })?;
        cmd.arg("--config")
            .arg(format!(
                "build.rustc-workspace-wrapper={}",
                toml_string(driver)?
            ))
            .env(
                "CLIPPY_ARGS",
                "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
            );
    }
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

/// The cargo home the registry's sources are unpacked under.
pub fn cargo_home() -> Option<PathBuf> {
    env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// `target.wasm32-wasip2.rustflags = [--remap-path-prefix ...]` for
/// `--config`. The cargo home comes last: rustc applies the last matching
/// prefix, and a cargo home inside the repository must still map to
/// `/cargo`.
fn remap_config(root: &Path) -> Result<String, String> {
    let mut flags = vec![format!("--remap-path-prefix={}=/stud", root.display())];
    if let Some(home) = cargo_home() {
        flags.push(format!("--remap-path-prefix={}=/cargo", home.display()));
    }
    let quoted = flags
        .iter()
        .map(|f| toml_string(f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!(
        "target.{WASM_TARGET}.rustflags=[{}]",
        quoted.join(", ")
    ))
}

/// A TOML basic string; a path with a control character is refused rather
/// than guessed at.
fn toml_string(s: &str) -> Result<String, String> {
    if s.chars().any(char::is_control) {
        return Err(format!("a control character in the path of `{s}`"));
    }
    Ok(format!(
        "\"{}\"",
        s.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}
