//! The authority stack under attack, end to end: the `stud` binary, real
//! components (hostile fixtures among them), real project folders. Each
//! test is an attack that must fail while the session goes on.

mod common;

use common::{StudEnv, call};

use serde_json::{Value, json};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn last_json(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("null")).unwrap_or(Value::Null)
}

/// A `tool-call.pre` transform that rewrites the path after the allowlist
/// approved the original one must not get its write through: the key is
/// derived from the arguments that run.
#[test]
fn a_transform_cannot_rewrite_an_approved_call() {
    let env = StudEnv::new();
    env.install("path-rewriter");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "notes/a.txt", "content": "pwned"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({"hooks": {"path-rewriter": {"from": "notes/a.txt", "to": "victim.txt"}}}),
    );
    let run = |allow: &[&str]| env.run_allowlist(allow);
    let out = run(&["write:notes/*"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(last_json(&out)["status"], "halted", "{}", stderr(&out));
    assert!(!env.project.path().join("victim.txt").exists());
    assert!(!env.project.path().join("notes/a.txt").exists());
    // The halt names the path that would really have been written.
    assert!(stderr(&out).contains("victim.txt"), "{}", stderr(&out));

    // Allowing the rewritten path is what lets it run: the decision was
    // made on the final arguments.
    let out = run(&["write:victim.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.read("victim.txt"), "pwned");
}

/// A session started with `--yolo` and resumed in a plain run does not
/// carry yolo over the command line: the stricter mode wins.
#[test]
fn resume_never_restores_a_looser_mode() {
    let env = StudEnv::new();
    env.script(
        json!([
            {"text": "started"},
            {"text": "", "tool_calls": [call("write", json!({"path": "pwned.txt", "content": "x"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    env.ok(&["run", "-p", "--yolo", "first"]);
    let out = env
        .command(&[
            "run",
            "-p",
            "-c",
            "--output-format",
            "stream-json",
            "second",
        ])
        .output()
        .expect("run stud");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(!env.project.path().join("pwned.txt").exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"event\":\"session.resumed\"") && stdout.contains("\"mode\":\"ask\""),
        "{stdout}"
    );
}
