//! The release profile compiles some crates unoptimized because they only
//! run inside the compiler (proc-macros and their helpers). That is sound
//! only while none of them is linked into `stud`: one that became a
//! runtime dependency would run unoptimized in every session. This reads
//! the list from the workspace's `Cargo.toml` and the dependency graph
//! from `cargo tree`, and checks both ways: nothing listed is linked, and
//! nothing listed is gone from the build (a stale list hides the next
//! crate that should be on it).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The package names `[profile.release.package.NAME]` compiles at `level`.
fn at_opt_level(level: &toml::Value) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("read Cargo.toml");
    let manifest: toml::Table = text.parse().expect("Cargo.toml parses");
    manifest["profile"]["release"]["package"]
        .as_table()
        .expect("[profile.release.package.*] tables")
        .iter()
        .filter(|(_, p)| p.get("opt-level") == Some(level))
        .map(|(name, _)| name.clone())
        .collect()
}

/// The names of the packages `stud` depends on along `edges`.
fn graph(edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--locked", "--offline", "-p", "stud", "-e", edges])
        .args(["--prefix", "none", "-f", "{p}"])
        .current_dir(root())
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn crates_compiled_unoptimized_never_reach_the_binary() {
    let unoptimized = at_opt_level(&toml::Value::Integer(0));
    assert!(unoptimized.contains("syn"), "{unoptimized:?}");
    let linked = graph("normal,no-proc-macro");
    let built = graph("normal,build");
    assert!(linked.contains("wasmtime") && built.contains("syn"));
    let in_binary: Vec<_> = unoptimized.intersection(&linked).collect();
    assert!(
        in_binary.is_empty(),
        "linked into stud, so they must not be at opt-level 0 in [profile.release.package] of Cargo.toml: {in_binary:?}"
    );
    let gone: Vec<_> = unoptimized.difference(&built).collect();
    assert!(
        gone.is_empty(),
        "no longer built for stud; remove them from [profile.release.package] in Cargo.toml: {gone:?}"
    );
}
