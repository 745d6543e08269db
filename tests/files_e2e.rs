//! The `files` import (contract 0.1.2) end to end: the `stud` binary, a
//! tool component that walks whatever root the model names (the `prowler`
//! fixture, with none of the SDK's checks), and real folders holding the
//! things an attacker would plant: symlinks out of the project, `..`, a
//! FIFO. Only files beneath the granted folder are ever read.

use crate::common;

use common::{StudEnv, call};
use serde_json::{Value, json};

/// A project with the prowler installed; `secret` is a folder outside it.
struct Env {
    env: StudEnv,
    secret: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let env = StudEnv::new();
        env.install("prowler");
        let secret = tempfile::tempdir().expect("tmp");
        std::fs::write(secret.path().join("key.txt"), "TOP-SECRET-KEY\n").expect("secret");
        Env { env, secret }
    }

    /// One headless turn whose model calls the prowler with each of
    /// `calls`' arguments; each call's result, in order.
    fn prowl(&self, calls: &[Value]) -> Vec<String> {
        let calls: Vec<Value> = calls.iter().map(|a| call("prowler", a.clone())).collect();
        self.env.script(
            json!([{"text": "", "tool_calls": calls}, {"text": "{{tool_results}}"}]),
            json!({}),
        );
        let out = self.env.ok_with(
            &["run", "-p", "--yolo", "--output-format", "json", "go"],
            &[],
        );
        let result: Value =
            serde_json::from_str(out.lines().last().expect("a result line")).expect("json");
        let text = result["result"].as_str().expect("an answer").to_string();
        // Each result starts with `== <root>` (the fixture's first line).
        text.split("== ").skip(1).map(str::to_string).collect()
    }
}

#[test]
fn a_walk_lists_and_reads_project_files_in_order_and_honours_ignore_files() {
    let env = Env::new();
    let p = env.env.project.path();
    std::fs::create_dir_all(p.join("src/b")).unwrap();
    std::fs::create_dir_all(p.join("target")).unwrap();
    env.env.file(".gitignore", "target/\n");
    env.env.file("src/b/two.rs", "fn two() {}\n");
    env.env.file("src/a.rs", "fn a() {}\n");
    env.env.file("target/out.rs", "built\n");
    env.env.file(".hidden", "hidden\n");
    let results = env.prowl(&[json!({"root": "/project/src"}), json!({"root": "/project"})]);
    assert!(
        results[0].contains(
            "/project/src/a.rs => bytes \"fn a() {}\\n\"\n/project/src/b/two.rs => bytes \"fn two() {}\\n\""
        ),
        "{}",
        results[0]
    );
    assert!(!results[1].contains("target/out.rs"), "{}", results[1]);
    assert!(!results[1].contains(".hidden"), "{}", results[1]);
    assert!(results[1].contains("/project/src/a.rs"), "{}", results[1]);
}

#[cfg(unix)]
#[test]
fn a_walk_never_reads_outside_the_granted_folder() {
    let env = Env::new();
    let p = env.env.project.path();
    let outside = env.secret.path();
    std::os::unix::fs::symlink(outside, p.join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.join("key.txt"), p.join("key-link.txt")).unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    env.env.file("sub/ok.txt", "fine\n");
    // A FIFO nobody writes to: opening it for reading would block.
    let fifo = p.join("pipe.txt");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let results = env.prowl(&[
        json!({"root": "/project"}),
        json!({"root": "/project/escape"}),
        json!({"root": "/project/../"}),
        json!({"root": "/project/sub/../../etc"}),
        json!({"root": "/"}),
        json!({"root": "/etc"}),
        json!({"root": "/project/key-link.txt"}),
    ]);
    let all = results.join("\n");
    assert!(!all.contains("TOP-SECRET"), "{all}");
    assert!(
        results[0].contains("/project/sub/ok.txt => bytes"),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("pipe.txt"), "{}", results[0]);
    assert!(!results[0].contains("escape"), "{}", results[0]);
    assert!(
        results[1].contains("walk refused [not-granted]") && results[1].contains("symlink"),
        "{}",
        results[1]
    );
    for r in &results[2..4] {
        assert!(r.contains("walk refused [invalid-path]"), "{r}");
    }
    for r in &results[4..6] {
        assert!(
            r.contains("walk refused [not-granted]")
                && r.contains("prowler")
                && r.contains("/project"),
            "{r}"
        );
    }
    assert!(
        results[6].contains("walk refused [not-granted]"),
        "{}",
        results[6]
    );
}

#[test]
fn open_walks_are_limited_per_instance() {
    let env = Env::new();
    env.env.file("a.txt", "a\n");
    let results = env.prowl(&[json!({"root": "/project", "hold": 5})]);
    assert!(
        results[0].contains("hold 4: refused [too-many-walks]") && !results[0].contains("hold 3"),
        "{}",
        results[0]
    );
    // The held walks were dropped: the walk after them went through.
    assert!(
        results[0].contains("/project/a.txt => bytes"),
        "{}",
        results[0]
    );
}

/// A tool that imports `files` without asking for a folder is refused at
/// load, and the error names the manifest line to add.
#[test]
fn a_tool_without_a_folder_cannot_link_files() {
    let env = StudEnv::new();
    let dir = env.install("prowler");
    let manifest = std::fs::read_to_string(dir.join("extension.toml")).unwrap();
    let without = manifest.replace(
        "filesystem = [{ dir = \"project\", access = \"read\" }]",
        "",
    );
    assert_ne!(manifest, without);
    std::fs::write(dir.join("extension.toml"), without).unwrap();
    let out = env
        .command(&["ext", "check", "prowler"])
        .output()
        .expect("run stud");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("prowler") && text.contains("files") && text.contains("filesystem = ["),
        "{text}"
    );
}
