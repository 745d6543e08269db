//! `stud audit`: the authority stack's decisions across kept sessions of
//! every project, from the sessions' records, filtered the way a team asks
//! ("which sessions ran `bash` in yolo mode").

use crate::common;

use common::{StudEnv, call};
use serde_json::{Value, json};

#[test]
fn audit_finds_the_sessions_that_ran_bash_in_yolo_mode_across_projects() {
    let env = StudEnv::new();
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "echo hi > made.txt"}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    // Here in yolo mode: `bash` runs.
    env.ok(&["run", "-p", "--yolo", "make it"]);
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    let yolo = list[0]["session_id"].as_str().unwrap().to_string();
    // Another project, in ask mode and headless: `bash` halts.
    let other = tempfile::tempdir().unwrap();
    std::fs::copy(
        env.project.path().join("script.json"),
        other.path().join("script.json"),
    )
    .unwrap();
    let out = env
        .command(&["run", "-p", "make it"])
        .current_dir(other.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let all: Value = serde_json::from_str(&env.ok(&["audit", "--tool", "bash", "--json"])).unwrap();
    let rows = all.as_array().unwrap();
    let sessions: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 2, "{all:#}");
    assert!(
        rows.iter()
            .any(|r| r["mode"] == "ask" && r["decision"] == "halt" && r["layer"] == "interaction"),
        "{all:#}"
    );
    assert!(
        rows.iter().all(|r| r["key"] == "echo hi\n> made.txt"),
        "{all:#}"
    );

    let text = env.ok(&[
        "audit",
        "--tool",
        "bash",
        "--mode",
        "yolo",
        "--decision",
        "approve",
        "--sessions",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].starts_with(&format!("{yolo}  ")), "{text}");
    assert!(
        lines[0].contains(
            &env.project
                .path()
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        ) || lines[0].contains(&env.project.path().display().to_string()),
        "{text}"
    );

    let line = env.ok(&["audit", "--session", &yolo, "--layer", "mode"]);
    assert!(
        line.contains("bash `echo hi; > made.txt`  approve by mode (yolo mode):"),
        "{line}"
    );
    assert_eq!(
        env.ok(&["audit", "--since", "2999-01-01"]).trim(),
        "(no decisions match)"
    );
    let out = env.run(&["audit", "--decision", "maybe"], "");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--decision maybe: expected one of approve, deny, halt, pass"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
