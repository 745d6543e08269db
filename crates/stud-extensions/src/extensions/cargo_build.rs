//! `stud ext build`: cargo builds the crate for `wasm32-wasip2`, the
//! component is put at the manifest's `component` path, and the checks a
//! load would make run offline, so an author learns about a missing
//! capability line or a wrong contract here, not from a user.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::digest::Sha256Digest;
use crate::manifest::Manifest;
use crate::runtime::{CodeSource, LoadError, Runtime};

pub const WASM_TARGET: &str = "wasm32-wasip2";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Pack(#[from] super::pack::PackError),
    #[error(
        "{0}: no Cargo.toml here; `stud ext build` builds a Rust crate (`stud ext new NAME` makes one)"
    )]
    NotACrate(PathBuf),
    #[error(
        "the {WASM_TARGET} target is not installed and `rustup target add {WASM_TARGET}` failed ({0}); install it and build again"
    )]
    Target(String),
    #[error("cannot run cargo ({0}); install Rust from https://rustup.rs and build again")]
    NoCargo(String),
    #[error(
        "cargo could not build {}; its errors are above. Fix them and run `stud ext build` again",
        .0.display()
    )]
    CargoFailed(PathBuf),
    #[error(
        "cargo built {} but produced no .wasm component; is `crate-type = [\"cdylib\"]` under [lib] in Cargo.toml?",
        .0.display()
    )]
    NoComponent(PathBuf),
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Load(#[from] LoadError),
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> BuildError + 'a {
    move |source| BuildError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A built and checked extension.
pub struct Built {
    pub manifest: Manifest,
    /// The component, at the manifest's `component` path.
    pub component: PathBuf,
    pub size: u64,
    pub sha256: Sha256Digest,
    pub code_source: CodeSource,
    /// What users will be asked to allow, in the install prompt's words.
    pub asks: Vec<String>,
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Install the wasm target with rustup when the toolchain used in `dir`
/// does not have it.
pub fn ensure_target(dir: &Path) -> Result<(), BuildError> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .current_dir(dir)
        .output();
    if let Ok(out) = &sysroot {
        let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if root.join("lib/rustlib").join(WASM_TARGET).is_dir() {
            return Ok(());
        }
    }
    eprintln!("installing the {WASM_TARGET} target with rustup");
    match Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .current_dir(dir)
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(BuildError::Target(format!("it exited with {s}"))),
        Err(e) => Err(BuildError::Target(format!("rustup: {e}"))),
    }
}

/// `cargo build --release --target wasm32-wasip2` in `dir`; the component
/// it produced, wherever the target folder is (`CARGO_TARGET_DIR` too).
/// Cargo's own messages go to the terminal.
pub fn cargo_build(dir: &Path) -> Result<PathBuf, BuildError> {
    // Absolute: cargo runs in `dir`, so a relative path would not resolve.
    let dir = &dir.canonicalize().map_err(io("find", dir))?;
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(BuildError::NotACrate(dir.to_path_buf()));
    }
    ensure_target(dir)?;
    let out = Command::new(cargo())
        .args([
            "build",
            "--release",
            "--target",
            WASM_TARGET,
            "--message-format=json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| BuildError::NoCargo(e.to_string()))?;
    if !out.status.success() {
        return Err(BuildError::CargoFailed(dir.to_path_buf()));
    }
    let wanted = manifest.canonicalize().unwrap_or(manifest);
    let mut found = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact"
            || msg["manifest_path"].as_str().map(PathBuf::from).as_ref() != Some(&wanted)
        {
            continue;
        }
        let wasm = msg["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .find(|f| f.ends_with(".wasm"));
        if let Some(f) = wasm {
            found = Some(PathBuf::from(f));
        }
    }
    found.ok_or_else(|| BuildError::NoComponent(dir.to_path_buf()))
}

/// Build the crate in `dir`, put its component where its manifest says
/// and run the load-time checks (contract stamp, imports against the
/// requested capabilities, exports of its kind) and a compile.
pub fn build(dir: &Path, runtime: &Arc<Runtime>) -> Result<Built, BuildError> {
    let manifest = super::pack::read_manifest(dir)?;
    let artifact = cargo_build(dir)?;
    let component = dir.join(&manifest.component);
    if artifact != component {
        if let Some(p) = component.parent() {
            std::fs::create_dir_all(p).map_err(io("create", p))?;
        }
        // Replaced in one step: a session watching this folder (`stud ext
        // dev`) never reads half a component.
        let bytes = std::fs::read(&artifact).map_err(io("read", &artifact))?;
        crate::atomic_write::write_atomic(&component, &bytes)
            .map_err(io("write the component to", &component))?;
    }
    let bytes = std::fs::read(&component).map_err(io("read", &component))?;
    let code_source = runtime.precompile(&manifest, &bytes, &component)?;
    Ok(Built {
        asks: super::consent::describe(&manifest.capabilities),
        size: bytes.len() as u64,
        sha256: Sha256Digest::of(&bytes),
        manifest,
        component,
        code_source,
    })
}
