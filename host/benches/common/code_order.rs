//! The list of functions a session runs, for the linker to place together
//! (`host/link/startup-order.txt`, read by `host/build.rs`).
//!
//! `STUD_BENCH_CODE_ORDER=FILE cargo bench -p stud --bench startup`
//! (with `STUD_BENCH_BIN` naming a `dist` build) runs the bench's session
//! with `code-order/trace.c` preloaded, which notes each page of the
//! binary's code the session runs, and writes every function on those
//! pages to FILE, in address order (it needs `cc`, `nm` and `readelf`).
//! Functions the list names and the binary lacks (code changed since) are
//! skipped by the linker, so the list is refreshed when the bench's
//! coverage line falls.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Build the preloaded tracer into `dir`.
pub fn build_tracer(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/code-order/trace.c");
    let library = dir.join("trace.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .status()
        .expect("run cc");
    assert!(status.success(), "building {} failed", source.display());
    library
}

/// The pages (file offsets) the traced runs noted: files `prefix.<pid>`.
pub fn traced_pages(dir: &Path, prefix: &str) -> BTreeSet<u64> {
    let mut pages = BTreeSet::new();
    for entry in std::fs::read_dir(dir).expect("trace dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) && name != prefix {
            let text = std::fs::read_to_string(entry.path()).expect("trace file");
            pages.extend(text.lines().filter_map(|l| u64::from_str_radix(l, 16).ok()));
        }
    }
    pages
}

/// `.text`'s address, file offset and size in `binary` (`readelf`);
/// `None` without binutils or a `.text`.
fn text_section(binary: &Path) -> Option<(u64, u64, u64)> {
    let out = Command::new("readelf")
        .arg("-SW")
        .arg(binary)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = fields.iter().position(|f| *f == ".text")?;
        let hex = |i: usize| u64::from_str_radix(fields.get(at + i)?, 16).ok();
        Some((hex(2)?, hex(3)?, hex(4)?))
    })
}

/// A binary's functions in `.text`, by address, and where `.text` lies.
struct Functions {
    /// `.text`'s address and file offset.
    address: u64,
    offset: u64,
    /// (address, size, name).
    all: Vec<(u64, u64, String)>,
}

/// `binary`'s functions (`readelf`, `nm`); `None` without binutils.
fn functions(binary: &Path) -> Option<Functions> {
    let (address, offset, size) = text_section(binary)?;
    let out = Command::new("nm")
        .args(["-S", "-n", "--defined-only"])
        .arg(binary)
        .output()
        .ok()?;
    let all = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(4, ' ').collect();
            let (at, len) = (
                u64::from_str_radix(f.first()?, 16).ok()?,
                u64::from_str_radix(f.get(1)?, 16).ok()?,
            );
            let (kind, name) = (f.get(2)?, f.get(3)?);
            (["t", "T", "w", "W"].contains(kind) && len > 0 && at >= address && at < address + size)
                .then(|| (at, len, name.to_string()))
        })
        .collect();
    Some(Functions {
        address,
        offset,
        all,
    })
}

/// Every function of `binary` with a byte on one of `pages`, by address.
pub fn functions_on(binary: &Path, pages: &BTreeSet<u64>) -> Vec<String> {
    let f = functions(binary).expect("readelf and nm (binutils) read the binary");
    let page_of = |at: u64| (at - f.address + f.offset) & !4095;
    f.all
        .into_iter()
        .filter(|(at, len, _)| {
            let (first, last) = (page_of(*at), page_of(at + len - 1));
            pages.range(first..=last).next().is_some()
        })
        .map(|(_, _, name)| name)
        .collect()
}

/// How many of the functions `list` names are in `binary`: (found,
/// listed); `None` without the list or binutils (the bench goes on).
pub fn coverage(binary: &Path, list: &Path) -> Option<(usize, usize)> {
    let listed: Vec<String> = std::fs::read_to_string(list)
        .ok()?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let present: BTreeSet<String> = functions(binary)?
        .all
        .into_iter()
        .map(|(_, _, n)| n)
        .collect();
    Some((
        listed.iter().filter(|n| present.contains(*n)).count(),
        listed.len(),
    ))
}
