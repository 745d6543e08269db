//! `stud acp` driven the way an editor drives it: a Node client on the
//! official ACP TypeScript SDK (`tests/fixtures/acp/client.mjs`) starts
//! the `stud` binary, opens a session and sends prompts; the scripted
//! provider answers; real tools change real files.

use crate::common;

use std::process::Command;

use common::StudEnv;
use serde_json::{Value, json};

fn tool(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

/// Run the test editor with `prompts`; every message it received, in
/// order.
fn editor(env: &StudEnv, prompts: &[&str]) -> Vec<Value> {
    editor_loading(env, None, prompts)
}

/// The same, loading session `load` instead of opening a new one.
fn editor_loading(env: &StudEnv, load: Option<&str>, prompts: &[&str]) -> Vec<Value> {
    let out = Command::new("node")
        .arg(common::npm::acp_client())
        .env("STUD_BIN", env!("CARGO_BIN_EXE_stud"))
        .env("STUD_HOME", env.home.path())
        .env("STUD_CACHE_DIR", common::shared_cache())
        .env("PROJECT", env.project.path())
        .env("PROMPTS", json!(prompts).to_string())
        .env("LOAD_SESSION", load.unwrap_or_default())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the editor failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn position(log: &[Value], what: impl Fn(&Value) -> bool) -> usize {
    log.iter()
        .position(what)
        .unwrap_or_else(|| panic!("not in {log:#?}"))
}

/// An edit asks the editor's permission (allowed once), streams a tool
/// call with its status updates and a diff, then the answer, and ends the
/// turn; a second prompt sees the history; a long tool call is cancelled
/// by the editor and the turn ends `cancelled`.
#[test]
fn an_editor_runs_turns_with_permission_diff_history_and_cancel() {
    let env = StudEnv::new();
    env.file("notes.txt", "hello world\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("e1", "edit", json!({"path": "notes.txt", "old_string": "world", "new_string": "editor"}))]},
            {"text": "edited the notes"},
            {"text": "I see {{messages}} messages"},
            {"text": "", "tool_calls": [tool("b1", "bash", json!({"command": "sleep 30"}))]},
            {"text": "never"}
        ]),
        json!({}),
    );
    let log = editor(&env, &["fix the notes", "what now", "cancel this one"]);
    let init = &log[0];
    assert_eq!(init["init"]["protocolVersion"], 1, "{init}");
    assert_eq!(init["init"]["agentInfo"]["name"], "stud");
    // The first turn, in order.
    let call = position(&log, |m| m["update"]["sessionUpdate"] == "tool_call");
    assert_eq!(log[call]["update"]["toolCallId"], "e1");
    assert_eq!(log[call]["update"]["kind"], "edit");
    let asked = position(&log, |m| m["type"] == "permission");
    assert_eq!(log[asked]["params"]["toolCall"]["toolCallId"], "e1");
    let kinds: Vec<&Value> = log[asked]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("allow_once"),
            &json!("allow_always"),
            &json!("reject_once")
        ]
    );
    let running = position(&log, |m| m["update"]["status"] == "in_progress");
    let done = position(&log, |m| m["update"]["status"] == "completed");
    let diff = log[done]["update"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .expect("a diff");
    assert_eq!(diff["oldText"], "world");
    assert_eq!(diff["newText"], "editor");
    assert!(diff["path"].as_str().unwrap().ends_with("notes.txt"));
    let text = position(&log, |m| {
        m["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    let stops: Vec<usize> = (0..log.len())
        .filter(|i| log[*i]["type"] == "stop")
        .collect();
    assert!(call < asked && asked < running && running < done && done < text && text < stops[0]);
    assert_eq!(log[stops[0]]["stopReason"], "end_turn");
    assert_eq!(env.read("notes.txt"), "hello editor\n");
    // The second turn sees the first.
    let second: String = log[stops[0]..stops[1]]
        .iter()
        .filter(|m| m["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(second, "I see 5 messages");
    assert_eq!(log[stops[1]]["stopReason"], "end_turn");
    // The third is cancelled while its tool runs.
    assert!(log[stops[1]..].iter().any(|m| m["type"] == "cancelling"));
    assert_eq!(log[stops[2]]["stopReason"], "cancelled");
    assert!(
        log[stops[2]]["ms"].as_u64().unwrap() < 20_000,
        "{}",
        log[stops[2]]
    );
}

/// `session/load` in a new agent process replays the kept conversation as
/// updates before it answers, and the next prompt continues it.
#[test]
fn loading_a_session_after_a_restart_replays_its_history() {
    let env = StudEnv::new();
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("r1", "read", json!({"path": "notes.txt"}))]},
            {"text": "the notes say hello"},
            {"text": "now {{messages}} messages"}
        ]),
        json!({}),
    );
    env.file("notes.txt", "hello\n");
    let first = editor(&env, &["read the notes"]);
    let id = first
        .iter()
        .find(|m| m["type"] == "session")
        .and_then(|m| m["sessionId"].as_str())
        .unwrap()
        .to_string();
    let log = editor_loading(&env, Some(&id), &["and then?"]);
    let loaded = position(&log, |m| m["type"] == "loaded");
    let replayed: Vec<(String, String)> = log[..loaded]
        .iter()
        .filter(|m| m["type"] == "update")
        .map(|m| {
            let u = &m["update"];
            let what = u["content"]["text"]
                .as_str()
                .or(u["toolCallId"].as_str())
                .unwrap_or_default();
            (
                u["sessionUpdate"].as_str().unwrap().to_string(),
                what.to_string(),
            )
        })
        .collect();
    let expected = [
        ("user_message_chunk", "read the notes"),
        ("tool_call", "r1"),
        ("tool_call_update", "r1"),
        ("agent_message_chunk", "the notes say hello"),
    ];
    assert_eq!(
        replayed,
        expected.map(|(a, b)| (a.to_string(), b.to_string())),
        "{log:#?}"
    );
    let answer: String = log[loaded..]
        .iter()
        .filter(|m| m["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "now 5 messages");
}
