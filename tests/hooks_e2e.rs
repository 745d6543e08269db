//! Hooks that fail or fall behind, end to end: a transform that fails
//! stops what it was meant to change (it fails closed), and an observer
//! that cannot keep up is told how much it lost before the session ends.

use crate::common;

use common::StudEnv;
use common::call;
use common::stream::{events, named, result};

use serde_json::{Value, json};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A headless run with JSON events on stdout: the events and the result.
fn stream_run(env: &StudEnv, extra: &[&str]) -> (std::process::Output, Vec<Value>, Value) {
    let mut args = vec!["run", "-p", "--output-format", "stream-json"];
    args.extend(extra);
    args.push("go");
    let out = env.command(&args).output().expect("run stud");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let evs = events(&stdout);
    let res = result(&stdout);
    (out, evs, res)
}

/// The secret a transform at `tool-call.post` was there to keep from the
/// model: when that transform fails (an error, or an answer that is not a
/// JSON object), the result is withheld, the model is told why, and the
/// failure is on the record. The session goes on.
#[test]
fn a_failing_result_transform_withholds_the_result() {
    for how in ["error", "not-object"] {
        let env = StudEnv::new();
        env.install("broken-transform");
        env.file("notes.txt", "launch code: hunter2-orbital-7\n");
        env.script(
            json!([
                {"text": "", "tool_calls": [call("read", json!({"path": "notes.txt"}))]},
                {"text": "the model saw: {{tool_results}}"}
            ]),
            json!({"hooks": {"broken-transform": {"fail-at": ["tool-call.post"], "how": how}}}),
        );
        let (out, evs, res) = stream_run(&env, &[]);
        assert!(out.status.success(), "{how}: {}", stderr(&out));
        let answer = res["result"].as_str().unwrap_or_default();
        assert!(
            !answer.contains("hunter2-orbital-7"),
            "{how}: the secret reached the model: {answer}"
        );
        assert!(
            answer.starts_with("the model saw:")
                && answer.contains("hook-transform-failed")
                && answer.contains("`broken-transform`"),
            "{how}: {answer}"
        );
        let failed = named(&evs, "hook.failed");
        assert_eq!(failed.len(), 1, "{how}: {failed:?}");
        let p = &failed[0]["payload"];
        assert_eq!(p["slot"], "tool-call.post", "{how}");
        assert_eq!(p["extension"], "broken-transform", "{how}");
        assert_eq!(p["payload"], "withheld", "{how}");
    }
}

/// Every slot a transform may attach to fails closed: a failing
/// `tool-call.pre` transform refuses the call (it does not run) and the
/// turn goes on; at any other slot the turn ends with
/// `hook-transform-failed` before what the transform guarded happens.
#[test]
fn a_failing_transform_stops_its_stage_at_every_slot() {
    for slot in [
        "receive-input.pre",
        "compose-request.post",
        "tool-call.pre",
        "render.pre",
    ] {
        let env = StudEnv::new();
        env.install("broken-transform");
        env.script(
            json!([
                {"text": "", "tool_calls": [call("write", json!({"path": "pwned.txt", "content": "x"}))]},
                {"text": "after: {{tool_results}}"}
            ]),
            json!({"hooks": {"broken-transform": {"fail-at": [slot]}}}),
        );
        let (out, evs, res) = stream_run(&env, &["--yolo"]);
        let failed = named(&evs, "hook.failed");
        assert_eq!(failed.len(), 1, "{slot}: {failed:?}");
        assert_eq!(failed[0]["payload"]["slot"], slot);
        let requests = named(&evs, "provider.request.started").len();
        match slot {
            "tool-call.pre" => {
                assert!(out.status.success(), "{slot}: {}", stderr(&out));
                assert!(
                    !env.project.path().join("pwned.txt").exists(),
                    "{slot}: the call ran"
                );
                let answer = res["result"].as_str().unwrap_or_default();
                assert!(
                    answer.starts_with("after:") && answer.contains("hook-transform-failed"),
                    "{slot}: {answer}"
                );
                assert!(named(&evs, "tool.started").is_empty(), "{slot}");
            }
            _ => {
                assert!(!out.status.success(), "{slot}: the turn went on");
                assert_eq!(res["status"], "error", "{slot}: {res}");
                assert_eq!(res["error_code"], "hook-transform-failed", "{slot}: {res}");
                let error = res["error"].as_str().unwrap_or_default();
                assert!(
                    error.contains(slot) && error.contains("`broken-transform`"),
                    "{slot}: {error}"
                );
                let expected = match slot {
                    // The request never left: its input or its final
                    // form were what the transform had to change.
                    "receive-input.pre" | "compose-request.post" => 0,
                    _ => 2,
                };
                assert_eq!(requests, expected, "{slot}");
                assert!(named(&evs, "render").is_empty(), "{slot}: rendered");
            }
        }
    }
}

/// An observer stalls while 300 calls fire `tool-call.pre`: its queue of
/// 256 overflows and nothing it observes happens after that. What it lost
/// is still reported, before the session ends, and adds up: every event
/// was either seen or counted as dropped.
#[test]
fn observer_drops_at_the_end_of_a_session_are_reported() {
    let env = StudEnv::new();
    env.install("slow-observer");
    env.file("a.txt", "alpha\n");
    let reads: Vec<Value> = (0..300)
        .map(|i| json!({"id": format!("r{i}"), "name": "read", "arguments": {"path": "a.txt"}}))
        .collect();
    env.script(
        json!([
            {"text": "", "tool_calls": reads},
            // Lets the observer go on; its own tool-call.pre is dropped too.
            {"text": "", "tool_calls": [call("write", json!({"path": "release", "content": "go"}))]},
            {"text": "done"}
        ]),
        json!({"hooks": {"slow-observer": {"release": "release"}}}),
    );
    let (out, evs, res) = stream_run(&env, &["--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(res["result"], "done");
    let mine = |name: &str| -> Vec<&Value> {
        named(&evs, name)
            .into_iter()
            .filter(|e| e["payload"]["extension"] == "slow-observer")
            .collect()
    };
    let seen = mine("hook.fired").len() + mine("hook.failed").len();
    let dropped: u64 = mine("hook.observer.dropped")
        .iter()
        .filter_map(|e| e["payload"]["count"].as_u64())
        .sum();
    assert!(dropped > 0, "nothing was reported dropped (seen {seen})");
    assert_eq!(
        seen as u64 + dropped,
        301,
        "seen {seen} + dropped {dropped} must be every tool-call.pre"
    );
    // Reported before the session's end record.
    let position = |name: &str| evs.iter().position(|e| e["event"] == name);
    let last_drop = evs
        .iter()
        .rposition(|e| e["event"] == "hook.observer.dropped")
        .expect("a drop report");
    assert!(last_drop < position("session.end").expect("session.end"));
}

/// A transform that "succeeds" but hands back a payload that lost the
/// call's arguments or the result's content: before, the kernel fell back
/// to the original (the unredacted result, the unrewritten call). Now that
/// fails closed as a failing transform does.
#[test]
fn a_transform_that_garbles_its_payload_fails_closed() {
    let env = StudEnv::new();
    env.install("broken-transform");
    env.file("notes.txt", "launch code: hunter2-orbital-7\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": "notes.txt"}))]},
            {"text": "the model saw: {{tool_results}}"}
        ]),
        json!({"hooks": {"broken-transform": {"fail-at": ["tool-call.post"], "how": "garbled"}}}),
    );
    let (out, _, res) = stream_run(&env, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = res["result"].as_str().unwrap_or_default();
    assert!(!answer.contains("hunter2-orbital-7"), "{answer}");
    assert!(answer.contains("hook-transform-failed"), "{answer}");

    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "made.txt", "content": "x"}))]},
            {"text": "the model saw: {{tool_results}}"}
        ]),
        json!({"hooks": {"broken-transform": {"fail-at": ["tool-call.pre"], "how": "garbled"}}}),
    );
    let (out, _, res) = stream_run(&env, &["--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = res["result"].as_str().unwrap_or_default();
    assert!(answer.contains("hook-transform-failed"), "{answer}");
    assert!(!env.project.path().join("made.txt").exists(), "{answer}");
}
