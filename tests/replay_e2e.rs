//! `stud session replay`: a recorded session re-run from its trace with no
//! provider. Unchanged, it diverges nowhere and sends byte-identical
//! requests (each is answered by the response recorded for its digest);
//! with a stricter guard substituted (`--with`), the report names the
//! call, the layer and the reason; `--live-tools` runs the tools that
//! write in a throwaway copy of the project as it was before the session.

use crate::common;

use common::stream::events;
use common::{StudEnv, call};
use serde_json::{Value, json};

/// A two-turn session kept in `env`: the model reads `notes.txt`, then
/// removes `old.txt` with `bash` and writes `log.txt`, then answers; the
/// second prompt reads again. Returns the session id and how many
/// requests it sent.
fn record(env: &StudEnv) -> (String, usize) {
    env.install("house-guard");
    env.file("notes.txt", "some notes\n");
    env.file("old.txt", "old\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": "notes.txt"}))]},
            {"text": "", "tool_calls": [call("bash", json!({"command": "rm old.txt && echo gone > log.txt"}))]},
            {"text": "tidied"},
            {"text": "", "tool_calls": [call("read", json!({"path": "notes.txt"}))]},
            {"text": "read again"}
        ]),
        json!({}),
    );
    let mut sent = 0;
    for (prompt, more) in [("tidy up", None), ("read them again", Some("-c"))] {
        let mut args = vec!["run", "-p", "--yolo", "--output-format", "stream-json"];
        args.extend(more);
        args.push(prompt);
        let out = env.ok(&args);
        sent += events(&out)
            .iter()
            .filter(|e| e["event"] == "provider.request.sent")
            .count();
    }
    assert!(!env.project.path().join("old.txt").exists());
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    let id = list[0]["session_id"]
        .as_str()
        .expect("a session")
        .to_string();
    (id, sent)
}

fn replay(env: &StudEnv, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["session", "replay"];
    all.extend_from_slice(args);
    let out = env.run(&all, "");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unchanged_replay_diverges_nowhere_and_sends_the_same_requests() {
    let env = StudEnv::new();
    let (id, sent) = record(&env);
    assert_eq!(sent, 5, "three requests, then two");
    // Put back what the session removed: a replay gives `bash` its
    // recorded result instead of running it again.
    env.file("old.txt", "put back\n");
    let (code, out, err) = replay(&env, &[&id, "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(report["divergences"], json!([]), "{report:#}");
    assert_eq!(report["turns"], 2, "{report:#}");
    assert_eq!(report["recorded_turns"], 2, "{report:#}");
    // Every request found the response recorded for its exact bytes.
    assert_eq!(report["requests"], sent as u64, "{report:#}");
    assert!(report.get("stopped").is_none(), "{report:#}");
    assert_eq!(env.read("old.txt"), "put back\n", "bash ran again");
    // The replay keeps no session of its own.
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list:#}");

    let (code, out, err) = replay(&env, &[&id]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.starts_with(&format!("{id}: replayed 2 of 2 turns in ")),
        "{out}"
    );
    assert!(out.trim_end().ends_with("no divergence"), "{out}");
}

#[test]
fn a_stricter_guard_substituted_is_named_with_its_layer_and_reason() {
    let env = StudEnv::new();
    let (id, _) = record(&env);
    let builds = tempfile::tempdir().unwrap();
    let strict = common::install_fixture(builds.path(), "house-guard-strict");
    let with = format!("house-guard={}", strict.display());
    let (code, out, err) = replay(&env, &[&id, "--with", &with, "--json"]);
    assert_eq!(code, 1, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("json report");
    let divergences = report["divergences"].as_array().expect("a list");
    let decision = divergences
        .iter()
        .find(|d| d["kind"] == "decision")
        .unwrap_or_else(|| panic!("no decision divergence: {report:#}"));
    assert_eq!(decision["turn"], 1, "{decision:#}");
    assert_eq!(decision["tool"], "bash", "{decision:#}");
    // `bash` keys a call by the commands it runs.
    assert_eq!(
        decision["key"], "rm old.txt\necho gone\n> log.txt",
        "{decision:#}"
    );
    let recorded = decision["recorded"].as_array().unwrap();
    assert!(
        recorded.iter().all(|s| s["decision"] != "deny"),
        "{decision:#}"
    );
    assert!(
        recorded.iter().any(|s| s["layer"] == "guard:house-guard"),
        "{decision:#}"
    );
    let denied = decision["replayed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["decision"] == "deny")
        .unwrap_or_else(|| panic!("no deny: {decision:#}"));
    assert_eq!(denied["layer"], "guard:house-guard", "{decision:#}");
    assert!(
        denied["reason"]
            .as_str()
            .unwrap()
            .contains("house rule: no `rm` in bash"),
        "{decision:#}"
    );
    // The refusal is another tool result, so the next request differs from
    // the recorded one: the replay says so and stops instead of guessing.
    let request = divergences
        .iter()
        .find(|d| d["kind"] == "request")
        .unwrap_or_else(|| panic!("no request divergence: {report:#}"));
    assert_eq!(request["parts"], json!(["messages"]), "{request:#}");
    assert_eq!(report["turns"], 1, "{report:#}");
    assert!(report["stopped"].as_str().is_some(), "{report:#}");

    // The same as a person reads it.
    let (code, out, _) = replay(&env, &[&id, "--with", &with]);
    assert_eq!(code, 1);
    let call_id = decision["call_id"].as_str().unwrap();
    let line = out
        .lines()
        .find(|l| l.contains("decided differently"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(&format!(
            "call {call_id} (bash `rm old.txt; echo gone; > log.txt`)"
        )),
        "{line}"
    );
    // Only the layers that differ, in the line; the decision before the
    // request it changed.
    assert!(
        line.contains("recorded approve by guard:house-guard (the guard allowed the call); now deny by guard:house-guard"),
        "{line}"
    );
    let decided = out.find("decided differently").unwrap();
    let request = out.find("request 3 is not the one recorded").unwrap();
    assert!(decided < request, "{out}");
    assert!(
        line.contains("deny by guard:house-guard (house rule: no `rm` in bash"),
        "{line}"
    );
    assert!(
        out.contains("request 3 is not the one recorded (messages differ)"),
        "{out}"
    );
}

#[test]
fn live_tools_run_in_a_throwaway_copy_of_the_project_as_it_was() {
    let env = StudEnv::new();
    let (id, _) = record(&env);
    // `old.txt` is gone now; the copy has it back from the session's
    // checkpoint, so `rm` succeeds there as it did then.
    std::fs::write(env.project.path().join("log.txt"), "mine\n").unwrap();
    let (code, out, err) = replay(&env, &[&id, "--live-tools", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(report["divergences"], json!([]), "{report:#}");
    assert!(!env.project.path().join("old.txt").exists());
    assert_eq!(
        env.read("log.txt"),
        "mine\n",
        "the real project was written"
    );
}

#[test]
fn replay_all_checks_every_session_of_the_folder_since_a_day() {
    let env = StudEnv::new();
    let (id, _) = record(&env);
    let (code, out, err) = replay(&env, &["--all"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("{id}: replayed 2 of 2 turns")),
        "{out}"
    );
    let (code, out, _) = replay(&env, &["--all", "--since", "2999-01-01"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "(no sessions to replay)");
    let (code, _, err) = replay(&env, &["--all", "--since", "last week"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--since last week: expected a day as YYYY-MM-DD"),
        "{err}"
    );
}

#[test]
fn bad_replay_input_names_what_was_wrong() {
    let env = StudEnv::new();
    let (id, _) = record(&env);
    let (code, _, err) = replay(&env, &[&id, "--with", "house-guard"]);
    assert_ne!(code, 0);
    assert!(err.contains("--with house-guard: expected ID=DIR"), "{err}");
    let builds = tempfile::tempdir().unwrap();
    let elsewhere = common::install_fixture(builds.path(), "path-rewriter");
    let with = format!("house-guard={}", elsewhere.display());
    let (code, _, err) = replay(&env, &[&id, "--with", &with]);
    assert_ne!(code, 0);
    assert!(
        err.contains("the extension there is `path-rewriter`, not `house-guard`"),
        "{err}"
    );
    let (code, _, err) = replay(&env, &["s-none"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot replay session `s-none`"), "{err}");
}

/// A tool that only reads runs again: a file changed since the recording
/// gives another result, which the report shows (recorded and now), and
/// the request carrying it is then not the recorded one.
#[test]
fn a_read_that_finds_other_content_is_a_different_tool_result() {
    let env = StudEnv::new();
    let (id, _) = record(&env);
    env.file("notes.txt", "other notes\n");
    let (code, out, err) = replay(&env, &[&id, "--json"]);
    assert_eq!(code, 1, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("json report");
    let divergences = report["divergences"].as_array().unwrap();
    let result = divergences
        .iter()
        .find(|d| d["kind"] == "tool-result")
        .unwrap_or_else(|| panic!("no tool-result divergence: {report:#}"));
    assert_eq!(result["tool"], "read", "{result:#}");
    assert_eq!(result["turn"], 1, "{result:#}");
    assert!(
        result["recorded"].as_str().unwrap().contains("some notes"),
        "{result:#}"
    );
    assert!(
        result["replayed"].as_str().unwrap().contains("other notes"),
        "{result:#}"
    );
    assert!(
        divergences.iter().any(|d| d["kind"] == "request"
            && d["request"] == 2
            && d["parts"] == json!(["messages"])),
        "{report:#}"
    );
}
