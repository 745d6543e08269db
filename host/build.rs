//! Link settings of the `stud` binary.
//!
//! On Linux with glibc, the binary's relative relocations are packed
//! (`-z pack-relative-relocs`, DT_RELR: binutils 2.38 and glibc 2.36 or
//! later). A position-independent Rust binary has hundreds of thousands of
//! them (every vtable and string-table pointer); as classic RELA entries
//! they are megabytes the dynamic loader reads at every start, and those
//! pages count in the process's resident size. Packed, they are a few
//! kilobytes (issue 42, `docs/benchmarks.md`). Whether the linker and C
//! library take it is probed by linking an empty program: where they do
//! not, the binary links as before.
//!
//! In optimized builds linked by LLD (Rust's default linker on
//! x86_64 Linux), the functions a session runs are placed together at the
//! start of `.text` (`--symbol-ordering-file`, the list in
//! `link/startup-order.txt`). The kernel maps a binary's code in whole
//! windows around each page a process touches, so start-up code scattered
//! over the 32 MB of `.text` made most of it resident; packed, only the
//! hot part is (`docs/benchmarks.md`, "Code layout"). A name the list has
//! and the binary does not (another profile, a changed dependency) is
//! skipped: the binary is the same, only less compact.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/startup-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=STUD_NO_CODE_ORDER");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let abi = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && abi == "gnu" && links_with("-Wl,-z,pack-relative-relocs", &[]) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if os == "linux" && abi == "gnu" {
        static_unwinder();
    }
    if let Some(lld) = default_lld() {
        let flag = format!(
            "-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            order.display()
        );
        if order.is_file()
            && env::var_os("STUD_NO_CODE_ORDER").is_none()
            && env::var("PROFILE").is_ok_and(|p| p == "release")
            && links_with(&flag, &lld)
        {
            println!("cargo:rustc-link-arg-bins={flag}");
        }
    }
}

/// Link the unwinder (`libgcc_eh.a`) into the binary instead of loading
/// `libgcc_s.so.1` at every start.
fn static_unwinder() {
    let Ok(out) = Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .stdin(Stdio::null())
        .output()
    else {
        return;
    };
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if let (true, Some(dir)) = (path.is_absolute() && path.is_file(), path.parent()) {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
    }
}

/// The arguments that make `cc` link with the LLD rustc itself links
/// with, when rustc links with it: Rust 1.90 and later on
/// `x86_64-unknown-linux-gnu`, with no linker chosen in the flags or the
/// cargo configuration (any other linker may not know the option).
fn default_lld() -> Option<Vec<String>> {
    let target = env::var("TARGET").ok()?;
    if target != "x86_64-unknown-linux-gnu" || env::var_os("RUSTC_LINKER").is_some() {
        return None;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("link") {
        return None;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(version.stdout).ok()?;
    let minor: u32 = version
        .split_whitespace()
        .nth(1)?
        .split('.')
        .nth(1)?
        .parse()
        .ok()?;
    if minor < 90 {
        return None;
    }
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8(sysroot.stdout).ok()?.trim());
    let gcc_ld = sysroot.join("lib/rustlib").join(&target).join("bin/gcc-ld");
    gcc_ld.join("ld.lld").is_file().then(|| {
        vec![
            "-fuse-ld=lld".to_string(),
            format!("-B{}", gcc_ld.display()),
        ]
    })
}

/// Whether `cc` links an empty program with `flag` (and `extra`), without
/// a warning.
fn links_with(flag: &str, extra: &[String]) -> bool {
    let Ok(out_dir) = env::var("OUT_DIR") else {
        return false;
    };
    let source = std::path::Path::new(&out_dir).join("probe.c");
    let binary = std::path::Path::new(&out_dir).join("probe");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let output = Command::new("cc")
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .arg("-pie")
        .arg("-fPIE")
        .arg(flag)
        .args(extra)
        .stdin(Stdio::null())
        .output();
    matches!(output, Ok(o) if o.status.success() && o.stderr.is_empty())
}
