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

use std::env;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let abi = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && abi == "gnu" && links_with("-Wl,-z,pack-relative-relocs") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether `cc` links an empty program with `flag`, without a warning.
fn links_with(flag: &str) -> bool {
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
        .stdin(Stdio::null())
        .output();
    matches!(output, Ok(o) if o.status.success() && o.stderr.is_empty())
}
