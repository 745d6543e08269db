//! The shape the compiler and this file keep: the workspace crates form a
//! layered DAG (a crate may use only crates below it), the pure-data crates
//! hold no wasmtime, and the kernel's top-level modules import each other
//! without a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The workspace crates from the bottom up. A crate may depend on any crate
/// listed before it, never on one after it.
const LAYERS: &[&str] = &[
    "stud-prebuilt",
    "stud-sdk-shell",
    "stud-protocol",
    "stud-sdk-macros",
    "stud-sdk",
    "stud-vocab",
    "stud-config",
    "stud-engine",
    "stud-bundled",
    "stud-bundled-manifests",
    "stud-native",
    "stud-fixtures",
    "stud-runtime",
    "stud-extensions",
    "stud-kernel",
    "stud",
];

/// Crates that must stay plain data: they load in tools that never run a
/// component, so the WebAssembly engine must not reach them.
const NO_ENGINE: &[&str] = &["stud-vocab", "stud-config", "stud-protocol"];

fn root() -> PathBuf {
    crate::common::workspace_root()
}

/// The machine's own target: metadata for every platform would want
/// crates (Android, Windows) that were never downloaded.
fn host_triple() -> String {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

fn metadata() -> Value {
    let host = host_triple();
    let out = crate::common::cargo_stdout(&[
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--offline",
        "--filter-platform",
        &host,
    ]);
    serde_json::from_slice(&out).expect("cargo metadata prints JSON")
}

fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == name)
}

#[test]
fn workspace_crates_form_a_layered_dag() {
    let meta = metadata();
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut seen = BTreeSet::new();
    for package in meta["packages"].as_array().expect("packages") {
        let id = package["id"].as_str().unwrap_or_default();
        if !members.contains(id) {
            continue;
        }
        let name = package["name"].as_str().expect("name");
        seen.insert(name.to_string());
        let own = rank(name).unwrap_or_else(|| {
            panic!("workspace crate {name} has no place in LAYERS (tests/layers.rs): add it")
        });
        for dep in package["dependencies"].as_array().expect("deps") {
            let dep_name = dep["name"].as_str().expect("dep name");
            let Some(theirs) = rank(dep_name) else {
                continue;
            };
            // Dev-dependencies may reach up (a crate's tests can drive the
            // binary's crate); what ships may not.
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            assert!(
                theirs < own,
                "{name} depends on {dep_name}, which sits above it in LAYERS: move the shared code down"
            );
        }
    }
    let expected: BTreeSet<String> = LAYERS.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, expected, "LAYERS and the workspace differ");
}

/// What `crate_name` ships with (normal and build dependencies, all the
/// way down), by package name.
fn shipped_closure(meta: &Value, crate_name: &str) -> BTreeSet<String> {
    let packages: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().expect("id"),
                p["name"].as_str().expect("name"),
            )
        })
        .collect();
    let nodes: BTreeMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve")
        .iter()
        .map(|n| {
            let deps = n["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|d| {
                    // Only what the crate ships with: normal and build deps.
                    d["dep_kinds"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k["kind"].as_str() != Some("dev")))
                })
                .filter_map(|d| d["pkg"].as_str())
                .collect();
            (n["id"].as_str().expect("id"), deps)
        })
        .collect();
    let start = packages
        .iter()
        .find(|(_, n)| **n == crate_name)
        .map(|(id, _)| *id)
        .expect("crate present");
    let mut stack = vec![start];
    let mut visited = BTreeSet::new();
    while let Some(id) = stack.pop() {
        if !visited.insert(id) {
            continue;
        }
        stack.extend(nodes.get(id).into_iter().flatten().copied());
    }
    visited
        .into_iter()
        .filter_map(|id| packages.get(id).map(|n| n.to_string()))
        .collect()
}

#[test]
fn pure_data_crates_do_not_reach_the_engine() {
    let meta = metadata();
    for crate_name in NO_ENGINE {
        for name in shipped_closure(&meta, crate_name) {
            assert!(
                !name.starts_with("wasmtime") && !name.starts_with("cranelift"),
                "{crate_name} reaches {name}: the pure-data layer must not pull in the engine"
            );
        }
    }
}

/// The guest side (the SDK, its wit-bindgen macros, and the shell parser
/// `stud-sdk-shell` wraps) is
/// built for `wasm32-wasip2`; compiling it for the host too cost every
/// first build a second set of wasm-tools crates (issue 42). What the
/// kernel shares with guests lives in `stud-protocol`.
#[test]
fn the_binary_does_not_link_the_guest_sdk() {
    let meta = metadata();
    for name in shipped_closure(&meta, "stud") {
        assert!(
            !matches!(
                name.as_str(),
                "stud-sdk" | "stud-sdk-macros" | "stud-sdk-shell" | "wit-bindgen" | "brush-parser"
            ),
            "the stud binary reaches {name}: move what the host needs into stud-protocol"
        );
    }
}

/// A module's path inside the kernel crate, from its file.
fn module_path(kernel_src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(kernel_src).expect("inside");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file");
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other,
}

/// Tokens of Rust source with comments, strings and chars dropped: enough
/// to read paths and braces.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('#') || next == Some('"'))
            && raw_string_start(&chars, i)
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            j += 1; // the opening quote
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push(Token::Other);
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(Token::Other);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            out.push(Token::Other);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(match c {
                '{' => Token::Open,
                '}' => Token::Close,
                ',' => Token::Comma,
                _ => Token::Other,
            });
            i += 1;
        }
    }
    out
}

fn raw_string_start(chars: &[char], i: usize) -> bool {
    // `r"` or `r#"` not part of a longer identifier.
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

/// Every path a token stream names from `start` on: `a::b::{c, d::e}`
/// gives `a::b::c` and `a::b::d::e`. Returns the paths and where they end.
fn paths_at(tokens: &[Token], start: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = start;
    loop {
        match tokens.get(i) {
            Some(Token::Ident(name)) => {
                prefix.push(name.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                return (vec![prefix], i);
            }
            Some(Token::Open) => {
                let mut all = Vec::new();
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Close) => return (all, i + 1),
                        Some(Token::Comma) => i += 1,
                        None => return (all, i),
                        Some(_) => {
                            let (inner, end) = paths_at(tokens, i);
                            for p in inner {
                                let mut full = prefix.clone();
                                full.extend(p);
                                all.push(full);
                            }
                            // `*` and other tokens a path cannot hold.
                            i = if end == i { i + 1 } else { end };
                        }
                    }
                }
            }
            _ => return (vec![prefix], i),
        }
    }
}

/// The kernel's top-level modules each file's code names, resolved from
/// `crate::kernel::x`, `super::x` and `self::x` paths (inline modules
/// such as `mod tests` are followed).
fn kernel_edges(kernel_src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = Vec::new();
    let mut dirs = vec![kernel_src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("kernel dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    for file in files {
        let base = module_path(kernel_src, &file);
        let Some(owner) = base.first().cloned() else {
            continue; // kernel/mod.rs: the facade that re-exports
        };
        let source = std::fs::read_to_string(&file).expect("read");
        let toks = tokens(&source);
        // Inline modules: (name, brace depth at which it closes).
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                Token::Open => depth += 1,
                Token::Close => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                }
                Token::Ident(kw) if kw == "mod" => {
                    if let (Some(Token::Ident(name)), Some(Token::Open)) =
                        (toks.get(i + 1), toks.get(i + 2))
                    {
                        inline.push((name.clone(), depth));
                        depth += 1;
                        i += 3;
                        continue;
                    }
                }
                Token::Ident(first)
                    if (first == "crate" || first == "super" || first == "self")
                        && toks.get(i + 1) == Some(&Token::PathSep)
                        && !matches!(
                            i.checked_sub(1).and_then(|p| toks.get(p)),
                            Some(Token::PathSep)
                        ) =>
                {
                    let (paths, end) = paths_at(&toks, i);
                    let mut here = base.clone();
                    here.extend(inline.iter().map(|(n, _)| n.clone()));
                    for path in paths {
                        if let Some(target) = resolve(&here, &path)
                            && target != owner
                        {
                            edges.entry(owner.clone()).or_default().insert(target);
                        }
                    }
                    i = end.max(i + 1);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        edges.entry(owner).or_default();
    }
    edges
}

/// The kernel's top-level module a path lands in, if any.
fn resolve(here: &[String], path: &[String]) -> Option<String> {
    let mut segments = path.iter();
    let mut at: Vec<String> = match segments.next()?.as_str() {
        "crate" => {
            if segments.next()? != "kernel" {
                return None;
            }
            Vec::new()
        }
        "self" => here.to_vec(),
        "super" => here[..here.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    for segment in segments {
        if segment == "super" {
            at.pop()?;
        } else {
            at.push(segment.clone());
            break;
        }
    }
    at.first().cloned()
}

/// Groups of modules that import each other (strongly connected, two or more).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for m in edges.keys() {
        if groups.iter().any(|g| g.contains(m)) {
            continue;
        }
        let group: BTreeSet<String> = edges
            .keys()
            .filter(|n| *n == m || (reaches[m].contains(*n) && reaches[*n].contains(m)))
            .cloned()
            .collect();
        if group.len() > 1 {
            groups.push(group);
        }
    }
    groups
}

#[test]
fn the_cycle_finder_sees_a_cycle_and_resolves_paths() {
    let toks = tokens(
        "use super::{turn::{fail, TurnStatus}, act};\n// crate::kernel::x\nfn f() { crate::kernel::session::Session::x(); \"super::no\"; }\nmod tests { use super::*; use super::super::roster::R; }",
    );
    let here = vec!["act".to_string(), "stage".to_string()];
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < toks.len() {
        if let Token::Ident(w) = &toks[i]
            && (w == "super" || w == "crate")
            && toks.get(i + 1) == Some(&Token::PathSep)
        {
            let (paths, end) = paths_at(&toks, i);
            for p in paths {
                found.insert(resolve(&here, &p));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    // Inside `act/stage.rs` (not its tests), `super` is `act`.
    assert!(found.contains(&Some("act".into())));
    assert!(found.contains(&Some("session".into())));
    assert!(!found.contains(&Some("no".into())));

    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    edges.entry("c".into()).or_default().insert("a".into());
    edges.entry("d".into()).or_default().insert("a".into());
    let found = cycles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0],
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect()
    );
}

#[test]
fn kernel_modules_import_each_other_without_a_cycle() {
    let kernel_src = root().join("crates/stud-kernel/src/kernel");
    let edges = kernel_edges(&kernel_src);
    assert!(
        edges.len() > 20,
        "the finder read the kernel: {:?}",
        edges.keys()
    );
    let found = cycles(&edges);
    let mut report = String::new();
    for group in &found {
        report.push_str(&format!(
            "cycle: {}\n",
            group.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
        for m in group {
            let into: Vec<&String> = edges[m].iter().filter(|n| group.contains(*n)).collect();
            report.push_str(&format!("  {m} -> {into:?}\n"));
        }
    }
    assert!(
        found.is_empty(),
        "kernel modules import each other in a cycle (move the shared types into a module both can use):\n{report}"
    );
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Generated binding types stop at the runtime: everything above it names
/// `runtime::domain`, so the next contract version changes the runtime's
/// adapter and the domain, not the loop (`runtime/contract/mod.rs`).
#[test]
fn only_the_runtime_names_a_contract_version() {
    let root = root();
    let mut files = Vec::new();
    for dir in [
        "crates/stud-kernel/src",
        "crates/stud-extensions/src",
        "crates/stud-config/src",
        "crates/stud-vocab/src",
        "host/src",
        "host/benches",
        "tests",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "read the sources: {}", files.len());
    let this = root.join("tests/layers.rs");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != this) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if ["runtime::contract", "runtime::bindings", "contract::v0_"]
                .iter()
                .any(|p| code.contains(p))
            {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the types through `runtime::domain`, not a contract version:\n{}",
        found.join("\n")
    );
}
