//! The release profile compiles some crates unoptimized because they only
//! run inside the compiler (proc-macros and their helpers). That is sound
//! only while none of them is linked into `stud`: one that became a
//! runtime dependency would run unoptimized in every session. This reads
//! the list from the workspace's `Cargo.toml` and the dependency graph
//! from `cargo tree`, and checks both ways: nothing listed is linked, and
//! nothing listed is gone from the build (a stale list hides the next
//! crate that should be on it).

use std::collections::BTreeSet;

use crate::common::{cargo_stdout, workspace_root};

/// `[profile.NAME.package]` of the workspace's `Cargo.toml`.
fn packages(profile: &str) -> toml::Table {
    let text =
        std::fs::read_to_string(workspace_root().join("Cargo.toml")).expect("read Cargo.toml");
    let manifest: toml::Table = text.parse().expect("Cargo.toml parses");
    manifest["profile"][profile]["package"]
        .as_table()
        .unwrap_or_else(|| panic!("[profile.{profile}.package.*] tables"))
        .clone()
}

/// The package names `[profile.NAME.package.PKG]` compiles at `level`.
fn at_opt_level(profile: &str, level: &toml::Value) -> BTreeSet<String> {
    packages(profile)
        .iter()
        .filter(|(_, p)| p.get("opt-level") == Some(level))
        .map(|(name, _)| name.clone())
        .collect()
}

/// The names of the packages `stud` depends on along `edges`.
fn graph(edges: &str) -> BTreeSet<String> {
    let out = cargo_stdout(&[
        "tree",
        "--locked",
        "--offline",
        "-p",
        "stud",
        "-e",
        edges,
        "--prefix",
        "none",
        "-f",
        "{p}",
    ]);
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn crates_compiled_unoptimized_never_reach_the_binary() {
    let unoptimized = at_opt_level("release", &toml::Value::Integer(0));
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

/// `dist` inherits `release`; the crates `release` optimizes for size must
/// be set back to full speed there, or the numbers users get would be
/// measured on a build slowed for the developers' sake.
#[test]
fn dist_sets_every_size_optimized_crate_back_to_full_speed() {
    let small = at_opt_level("release", &toml::Value::String("s".into()));
    assert!(small.contains("stud-kernel"), "{small:?}");
    let full = at_opt_level("dist", &toml::Value::Integer(3));
    let left: Vec<_> = small.difference(&full).collect();
    assert!(
        left.is_empty(),
        "size-optimized in release but not set to opt-level 3 in [profile.dist.package] of Cargo.toml: {left:?}"
    );
}

/// A profile setting for a package that is not built does nothing, and
/// cargo only warns. The per-package settings are what keep the release
/// build under ten minutes and the engine's compiler fast (issue 42): a
/// renamed or dropped crate would lose its setting without a sound.
#[test]
fn every_package_a_profile_names_is_built() {
    let built = graph("normal,build");
    for profile in ["dev", "release", "dist"] {
        let named: BTreeSet<String> = packages(profile).keys().cloned().collect();
        assert!(!named.is_empty(), "[profile.{profile}.package.*]");
        let gone: Vec<_> = named.difference(&built).collect();
        assert!(
            gone.is_empty(),
            "not built for stud; remove them from [profile.{profile}.package] in Cargo.toml: {gone:?}"
        );
    }
}
