//! The message loop end to end: the `stud` binary, bundled components,
//! real files, scripted model turns.

use crate::common;

use common::{StudEnv, call};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// stream-json stdout: the events and the final result object.
fn events(out: &Output) -> (Vec<Value>, Value) {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut events = Vec::new();
    let mut result = Value::Null;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("bad line {line}: {e}"));
        if v["type"] == "result" {
            result = v;
        } else {
            events.push(v);
        }
    }
    (events, result)
}

fn named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

/// The mode layer's `approval.decided` records (`mode`, or `interaction`
/// when it asked), without the state machine layer's and the guards'.
fn mode_decisions(events: &[Value]) -> Vec<&Value> {
    named(events, "approval.decided")
        .into_iter()
        .filter(|e| matches!(e["payload"]["layer"].as_str(), Some("mode" | "interaction")))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn tool_call_cycle_with_two_continuation_rounds() {
    let env = StudEnv::new();
    env.file("a.txt", "alpha\n");
    env.script(
        json!([
            {"text": "Reading.", "tool_calls": [call("read", json!({"path": "a.txt"}))]},
            {"text": "Listing.", "tool_calls": [call("list", json!({}))]},
            {"text": "Done: {{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run(
        &["run", "-p", "--output-format", "stream-json", "look around"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, result) = events(&out);
    assert_eq!(result["status"], "ok");
    assert_eq!(result["iterations"], 3);
    assert_eq!(named(&events, "provider.request.completed").len(), 3);
    let ok = named(&events, "tool.succeeded");
    assert_eq!(ok.len(), 2);
    assert!(
        ok[0]["payload"]["output"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    let done = result["result"].as_str().unwrap();
    assert!(
        done.starts_with("Done:") && done.contains("alpha") && done.ends_with("a.txt\nscript.json"),
        "{done}"
    );
    // Stages walk in order, with COMPOSE..TOOL_CALL repeated.
    let stages: Vec<String> = named(&events, "stage.pre")
        .iter()
        .map(|e| e["payload"]["stage"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(stages[0], "receive-input");
    assert_eq!(stages.iter().filter(|s| *s == "compose-request").count(), 3);
    assert_eq!(stages.iter().filter(|s| *s == "tool-call").count(), 2);
    assert_eq!(stages.last().unwrap(), "render");
    // Headless text output is the final answer.
    let out = env.run(&["run", "-p"], "again");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn guard_deny_at_tool_call_pre_becomes_an_error_result_and_is_audited() {
    let env = StudEnv::new();
    env.file(".env", "SECRET=1\n");
    env.install("recorder");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": ".env"}))]},
            {"text": "Result: {{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run(
        &["run", "-p", "--output-format", "stream-json", "show env"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, result) = events(&out);
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("error [approval-denied]")
            && text.contains("protect-paths")
            && text.contains(".env"),
        "{text}"
    );
    assert!(
        named(&events, "tool.started").is_empty(),
        "the denied tool must not run"
    );
    let denied: Vec<&Value> = named(&events, "approval.decided")
        .into_iter()
        .filter(|e| e["payload"]["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["payload"]["layer"], "guard:protect-paths");
    assert_eq!(
        named(&events, "hook.denied")[0]["payload"]["extension"],
        "protect-paths"
    );
    // Post hooks of the denied call never fired: the recorder saw tool-call.pre but no tool-call.post.
    let seen = named(&events, "ext.recorder.seen");
    let seen: Vec<&str> = seen[0]["payload"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(seen.contains(&"tool-call.pre:read"), "{seen:?}");
    assert!(
        !seen.iter().any(|s| s.starts_with("tool-call.post")),
        "{seen:?}"
    );
    assert!(
        named(&events, "hook.fired")
            .iter()
            .all(|e| e["payload"]["slot"] != "tool-call.post")
    );
}

#[test]
fn transform_hook_rewrites_tool_arguments() {
    let env = StudEnv::new();
    env.file("wanted.txt", "the real content\n");
    env.install("path-rewriter");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": "typo.txt"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({"hooks": {"path-rewriter": {"from": "typo.txt", "to": "wanted.txt"}}}),
    );
    let out = env.run(&["run", "-p", "--output-format", "json", "read it"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, result) = events(&out);
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("the real content"),
        "{result}"
    );
}

#[test]
fn observer_sees_every_stage_in_order() {
    let env = StudEnv::new();
    env.install("recorder");
    env.script(
        json!([{"text": "", "tool_calls": [call("list", json!({}))]}, {"text": "ok"}]),
        json!({}),
    );
    let out = env.run(&["run", "-p", "--output-format", "stream-json", "go"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, _) = events(&out);
    let seen = named(&events, "ext.recorder.seen");
    assert_eq!(seen.len(), 1);
    let round = [
        "compose-request.pre",
        "compose-request.post",
        "send-request.pre",
        "send-request.post",
        "stream-response.pre",
        "stream-response.post",
    ];
    let mut expected = vec!["receive-input.pre", "receive-input.post"];
    expected.extend(round);
    expected.extend(["tool-call.pre:list", "tool-call.post:list"]);
    expected.extend(round);
    expected.extend(["render.pre", "render.post"]);
    assert_eq!(seen[0]["payload"], json!(expected));
}

#[test]
fn max_iterations_ends_the_turn_with_a_clear_error() {
    let env = StudEnv::new();
    env.file("script.json", &json!({"repeat": true, "turns": [{"text": "again", "tool_calls": [call("list", json!({}))]}]}).to_string());
    env.scripted_settings(json!({}));
    let out = env.run(
        &[
            "run",
            "-p",
            "--output-format",
            "json",
            "--max-iterations",
            "3",
            "loop",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (_, result) = events(&out);
    assert_eq!(result["error_code"], "loop-bound-exceeded");
    assert_eq!(result["iterations"], 3);
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("may already have run"),
        "{result}"
    );
}

#[test]
fn parallel_calls_ask_in_order_and_answer_in_order() {
    let env = StudEnv::new();
    env.install("hostile");
    let calls: Vec<Value> = (1..=3).map(|i| json!({"id": format!("c{i}"), "name": "hostile", "arguments": {"mode": "ok", "tag": format!("t{i}")}})).collect();
    env.script(
        json!([{"text": "", "tool_calls": calls}, {"text": "{{tool_results}}"}]),
        json!({}),
    );
    // Not headless: the console UI asks on the terminal (stderr with JSON output) and reads stdin.
    let out = env.run(
        &["run", "--output-format", "stream-json", "three at once"],
        "y\ny\nyes\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, result) = events(&out);
    let asked: Vec<Value> = mode_decisions(&events)
        .iter()
        .map(|e| e["payload"]["call_id"].clone())
        .collect();
    assert_eq!(asked, vec![json!("c1"), json!("c2"), json!("c3")]);
    assert!(
        mode_decisions(&events)
            .iter()
            .all(|e| e["payload"]["layer"] == "interaction")
    );
    assert_eq!(named(&events, "interaction.requested").len(), 3);
    let prompts = stderr(&out);
    let order: Vec<usize> = ["`t1`", "`t2`", "`t3`"]
        .iter()
        .map(|t| {
            prompts
                .find(&format!("Allow hostile {t}?"))
                .expect("prompted")
        })
        .collect();
    assert!(order[0] < order[1] && order[1] < order[2], "{prompts}");
    let tool_msg = named(&events, "message.appended")
        .into_iter()
        .find(|e| e["payload"]["role"] == "tool")
        .unwrap();
    let ids: Vec<Value> = tool_msg["payload"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["call_id"].clone())
        .collect();
    assert_eq!(ids, vec![json!("c1"), json!("c2"), json!("c3")]);
    assert_eq!(result["result"], "alive\nalive\nalive");
}

/// A `bash` program that leaves `me` and waits (up to 10 s) for `other`;
/// it prints whether it met it.
fn meet(me: &str, other: &str) -> String {
    format!(
        "touch {me}; for i in $(seq 200); do [ -e {other} ] && break; sleep 0.05; done; if [ -e {other} ]; then echo {me}-met; else echo {me}-alone; fi"
    )
}

/// Calls in one response run at once, whether they go to one tool or to
/// two: the first waits for a file the other makes, so run one after the
/// other it would give up and say `alone`. Two calls of one tool need two
/// instances of it (the extension's pool).
#[test]
fn calls_to_one_tool_and_to_two_tools_run_at_once() {
    let bash = |id: &str, command: String| json!({"id": id, "name": "bash", "arguments": {"command": command}});
    let answer = answer_to(json!([
        bash("c1", meet("a", "b")),
        bash("c2", meet("b", "a"))
    ]));
    assert!(
        answer.contains("a-met") && answer.contains("b-met"),
        "one tool: {answer}"
    );
    // Two tools: bash (asked first) waits for the file `write` makes.
    let write = json!({"id": "c2", "name": "write", "arguments": {"path": "b", "content": "b"}});
    let answer = answer_to(json!([bash("c1", meet("a", "b")), write]));
    assert!(answer.contains("a-met"), "two tools: {answer}");
}

/// A `--yolo` headless run in a fresh project whose model makes `calls`
/// in one response, then answers with their results.
fn answer_to(calls: Value) -> String {
    let env = StudEnv::new();
    env.script(
        json!([{"text": "", "tool_calls": calls}, {"text": "{{tool_results}}"}]),
        json!({}),
    );
    let out = env.run(
        &["run", "-p", "--yolo", "--output-format", "json", "meet"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, result) = events(&out);
    result["result"].as_str().unwrap_or_default().to_string()
}

/// Edits of one file in one response take turns (the `edit` tool keeps
/// one instance): run at once, both would read the old text and the
/// second write would undo the first.
#[test]
fn several_edits_of_one_file_in_one_response_all_land() {
    let env = StudEnv::new();
    let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
    env.file("a.txt", &format!("{}\n", words.join("\n")));
    let edits: Vec<Value> = words
        .iter()
        .enumerate()
        .map(|(i, w)| json!({"id": format!("e{i}"), "name": "edit", "arguments": {"path": "a.txt", "old_string": w, "new_string": w.to_uppercase()}}))
        .collect();
    env.script(
        json!([{"text": "", "tool_calls": edits}, {"text": "done"}]),
        json!({}),
    );
    let out = env.run(
        &["run", "-p", "--yolo", "--output-format", "json", "edit"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let upper: Vec<String> = words.iter().map(|w| w.to_uppercase()).collect();
    assert_eq!(env.read("a.txt"), format!("{}\n", upper.join("\n")));
}

#[test]
fn headless_halts_on_a_needed_approval_and_yolo_passes_it() {
    let env = StudEnv::new();
    env.install("hostile");
    env.script(json!([{"text": "", "tool_calls": [call("hostile", json!({"mode": "ok"}))]}, {"text": "{{tool_results}}"}]), json!({}));
    let out = env.run(&["run", "-p", "--output-format", "json", "do it"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let (_, result) = events(&out);
    assert_eq!(result["status"], "halted");
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("permission-required"))
        .expect("structured halt line");
    let v: Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["tool"], "hostile");
    assert!(v["hint"].as_str().unwrap().contains("--yolo"));

    let out = env.run(
        &["run", "-p", "--yolo", "--output-format", "json", "do it"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, result) = events(&out);
    assert_eq!(result["result"], "alive");
}

#[test]
fn allowlist_approves_a_match_and_asks_for_another() {
    let env = StudEnv::new();
    env.file("a.txt", "A\n");
    env.file("b.txt", "B\n");
    env.script(
        json!([{"text": "", "tool_calls": [call("read", json!({"path": "a.txt"})), call("read", json!({"path": "b.txt"}))]}, {"text": "{{tool_results}}"}]),
        json!({}),
    );
    let out = env.run(
        &[
            "run",
            "--mode",
            "allowlist",
            "--allow",
            "read:a.*",
            "--output-format",
            "stream-json",
            "read both",
        ],
        "n\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, result) = events(&out);
    let decisions: Vec<(Value, Value, Value)> = mode_decisions(&events)
        .iter()
        .map(|e| {
            (
                e["payload"]["key"].clone(),
                e["payload"]["decision"].clone(),
                e["payload"]["layer"].clone(),
            )
        })
        .collect();
    assert_eq!(
        decisions[0],
        (json!("a.txt"), json!("approve"), json!("mode"))
    );
    assert_eq!(
        decisions[1],
        (json!("b.txt"), json!("deny"), json!("interaction"))
    );
    assert_eq!(
        stderr(&out).matches("Allow read `b.txt`?").count(),
        1,
        "{}",
        stderr(&out)
    );
    let text = result["result"].as_str().unwrap();
    assert!(text.contains("A") && text.contains("declined"), "{text}");
}

#[test]
fn ctrl_c_cancels_a_turn_stuck_in_a_tool() {
    let env = StudEnv::new();
    let dir = env.install("hostile");
    let manifest = std::fs::read_to_string(dir.join("extension.toml"))
        .unwrap()
        .replace("timeout-ms = 500", "timeout-ms = 600000");
    std::fs::write(dir.join("extension.toml"), manifest).unwrap();
    env.script(json!([{"text": "working", "tool_calls": [call("hostile", json!({"mode": "loop"}))]}, {"text": "never"}]), json!({}));
    let (mut child, mut seen, lines) = env.start_until(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "spin",
        ],
        "tool.started",
    );
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    common::signal(&child, "INT");
    seen.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(30));
    let all: Vec<Value> = seen
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<&Value> = all.iter().filter(|e| e["event"] == "turn.end").collect();
    assert_eq!(ends[0]["payload"]["status"], "cancelled");
    assert_eq!(
        all.iter()
            .filter(|e| e["event"] == "tool.cancelled")
            .count(),
        1
    );
    // The partial turn is recorded: the tool result says it was cancelled.
    let tool_msg = all
        .iter()
        .find(|e| e["event"] == "message.appended" && e["payload"]["role"] == "tool")
        .expect("tool result recorded");
    assert!(
        tool_msg["payload"]["content"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("cancelled")
    );
}

#[test]
fn a_slow_observer_loses_events_without_slowing_the_turn() {
    let env = StudEnv::new();
    env.install("slow-logger");
    let long = "word ".repeat(800);
    env.file(
        "script.json",
        &json!({"chunk": 1, "turns": [{"text": long}]}).to_string(),
    );
    env.scripted_settings(json!({}));
    let out = env.run(&["run", "-p", "--output-format", "stream-json", "talk"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, _) = events(&out);
    let tokens = named(&events, "provider.tokens").len();
    assert_eq!(tokens, 4000);
    let start = named(&events, "turn.start")[0]["ts"].as_u64().unwrap();
    let end = named(&events, "turn.end")[0]["ts"].as_u64().unwrap();
    // At 5 ms per event the logger needs 20 s for the tokens alone; the turn did not wait for it.
    assert!(
        end - start < (tokens as u64 * 5) / 2,
        "turn took {} ms",
        end - start
    );
    let seen =
        std::fs::read_to_string(data_file(env.home.path(), "slow-logger", "seen.txt")).unwrap();
    let dropped: u64 = seen
        .lines()
        .filter(|l| l.starts_with("bus.dropped"))
        .map(|l| l.split(' ').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(dropped > 0, "the slow logger lost nothing?");
    // Authoritative records were not dropped.
    assert!(seen.lines().any(|l| l.starts_with("turn.end")));
    assert!(seen.lines().any(|l| l.starts_with("message.appended")));
}

/// The event names in a `jsonl` log, in order.
fn logged_names(log: &str) -> Vec<String> {
    log.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn data_file(home: &Path, id: &str, file: &str) -> PathBuf {
    home.join("data").join(id).join(file)
}

#[test]
fn jsonl_logger_writes_every_turn_with_secrets_redacted() {
    let env = StudEnv::new();
    let key = "sk-abcdefghijklmnopqrstuvwxyz0123456789";
    env.file("creds.txt", &format!("OPENAI_API_KEY={key}\n"));
    env.script(
        json!([{"text": "", "tool_calls": [call("read", json!({"path": "creds.txt"}))]}, {"text": "{{tool_results}}"}]),
        json!({}),
    );
    let out = env.run(&["run", "-p", "show the creds"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    // The transform hook already redacted what the model saw.
    assert!(!String::from_utf8_lossy(&out.stdout).contains(key));
    // One file per session, named by its id.
    let (_, result) = events(&env.run(&["run", "-p", "--output-format", "json", "again"], ""));
    let id = result["session_id"].as_str().unwrap();
    let logs: Vec<PathBuf> = std::fs::read_dir(env.home.path().join("data").join("jsonl"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(
        logs.iter()
            .any(|p| p.file_name().unwrap() == format!("{id}.jsonl").as_str()),
        "{logs:?}"
    );
    let first = logs
        .iter()
        .find(|p| p.file_name().unwrap() != format!("{id}.jsonl").as_str())
        .unwrap();
    let log = std::fs::read_to_string(first).unwrap();
    assert!(!log.contains(key), "the key leaked into the log");
    assert!(log.contains("[REDACTED]"));
    let names = logged_names(&log);
    for expected in [
        "session.start",
        "turn.start",
        "tool.succeeded",
        "approval.decided",
        "turn.end",
        "session.end",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from the log"
        );
    }
}

/// A headless run holds its loggers and observers until its first
/// provider request is out (issue 18). A run that never sends one (a
/// slash command) must still end, with everything logged.
#[test]
fn a_headless_run_without_a_request_still_logs_everything_and_ends() {
    let env = StudEnv::new();
    let mut child = env
        .command(&["run", "-p", "--output-format", "json", "/cost"])
        .spawn()
        .expect("start stud");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("stud did not end: its loggers waited for a request that never came");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("output");
    assert!(status.success(), "{}", stderr(&out));
    let logs: Vec<PathBuf> = std::fs::read_dir(env.home.path().join("data").join("jsonl"))
        .expect("the jsonl logger wrote its folder")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let names = logged_names(&std::fs::read_to_string(&logs[0]).unwrap());
    assert_eq!(
        names.first().map(String::as_str),
        Some("session.start"),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "session.end"), "{names:?}");
}

#[test]
fn unknown_tools_and_bad_arguments_become_error_results() {
    let env = StudEnv::new();
    env.script(
        json!([
            {"text": "", "tool_calls": [call("nope", json!({})), call("read", json!({"path": 5})), call("read", json!({"path": "missing.txt"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run(&["run", "-p", "--output-format", "json", "try"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, result) = events(&out);
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("error [not-found]: unknown tool `nope`; available tools: ask-user, bash, edit, glob, grep, list, multi-edit, read, task, web-fetch, write"),
        "{text}"
    );
    assert!(
        text.contains("error [input-invalid]: arguments do not match the schema of `read`"),
        "{text}"
    );
    assert!(
        text.contains("error [not-found]") && text.contains("missing.txt"),
        "{text}"
    );
}

#[test]
fn without_a_prompt_on_a_terminal_it_runs_a_loop_of_turns() {
    let env = StudEnv::new();
    env.file("a.txt", "x\n");
    let out = env.on_terminal("run", "first question\nsecond question\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    // Two turns of the demo script, each ending before the next prompt.
    assert_eq!(
        screen.matches("Here is what the project contains:").count(),
        2,
        "{screen}"
    );
    assert_eq!(screen.matches("stud> ").count(), 3, "{screen}");
    let last_answer = screen.rfind("Here is what the project contains:").unwrap();
    assert!(screen.rfind("stud> ").unwrap() > last_answer, "{screen}");
}

/// Run with stdin held open (a terminal nobody types into), stream-json out.
fn run_with_idle_stdin(env: &StudEnv, args: &[&str]) -> (Vec<Value>, Value, std::time::Duration) {
    let started = Instant::now();
    let mut child = env.command(args).stdin(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let status = child.wait().unwrap();
    let took = started.elapsed();
    drop(stdin);
    let text = reader.join().unwrap();
    assert!(status.success(), "stud failed:\n{text}");
    let out = Output {
        status,
        stdout: text.into_bytes(),
        stderr: Vec::new(),
    };
    let (events, result) = events(&out);
    (events, result, took)
}

fn install_auto_ui(env: &StudEnv, id: &str, accept: bool, delay_ms: u64) {
    let dir = env.install("auto-ui");
    let target = env.home.path().join("extensions").join(id);
    std::fs::rename(&dir, &target).unwrap();
    let manifest = std::fs::read_to_string(target.join("extension.toml"))
        .unwrap()
        .replace("id = \"auto-ui\"", &format!("id = \"{id}\""));
    std::fs::write(target.join("extension.toml"), manifest).unwrap();
    let mut settings: Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    settings["ui"][id] = json!({"accept": accept, "delay-ms": delay_ms});
    env.settings(settings);
}

#[test]
fn the_chosen_interactor_answers_and_other_uis_are_not_asked() {
    let env = StudEnv::new();
    env.install("hostile");
    env.script(json!([{"text": "", "tool_calls": [call("hostile", json!({"mode": "ok"}))]}, {"text": "{{tool_results}}"}]), json!({}));
    install_auto_ui(&env, "fast-yes", true, 0);
    install_auto_ui(&env, "slow-no", false, 20_000);
    choose_interactor(&env, "fast-yes");
    let (events, result, took) =
        run_with_idle_stdin(&env, &["run", "--output-format", "stream-json", "go"]);
    assert_eq!(result["result"], "alive");
    let answered = named(&events, "interaction.answered");
    assert_eq!(answered[0]["payload"]["by"], "fast-yes");
    assert_eq!(answered[0]["payload"]["status"], "accepted");
    assert!(
        took < Duration::from_secs(15),
        "waited for the slow UI: {took:?}"
    );
}

fn choose_interactor(env: &StudEnv, id: &str) {
    let mut settings: Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    settings["active"]["interactor"] = json!(id);
    env.settings(settings);
}

#[test]
fn an_unanswered_approval_times_out_as_a_denial() {
    let env = StudEnv::new();
    env.install("hostile");
    env.script(
        json!([{"text": "", "tool_calls": [call("hostile", json!({"mode": "ok"}))]}, {"text": "{{tool_results}}"}]),
        json!({"runtime": {"interactionTimeoutMs": 300}}),
    );
    install_auto_ui(&env, "slow-no", false, 20_000);
    choose_interactor(&env, "slow-no");
    let (events, result, took) =
        run_with_idle_stdin(&env, &["run", "--output-format", "stream-json", "go"]);
    let decided = mode_decisions(&events);
    assert_eq!(decided[0]["payload"]["decision"], "deny");
    assert_eq!(decided[0]["payload"]["reason"], "timed out");
    assert_eq!(
        named(&events, "interaction.answered")[0]["payload"]["status"],
        "timeout"
    );
    assert!(
        result["result"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[test]
fn tool_progress_streams_as_events_tied_to_the_call() {
    let env = StudEnv::new();
    env.install("hostile");
    env.script(
        json!([{"text": "", "tool_calls": [{"id": "p1", "name": "hostile", "arguments": {"mode": "progress"}}]}, {"text": "{{tool_results}}"}]),
        json!({}),
    );
    let out = env.run(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (events, result) = events(&out);
    assert_eq!(result["result"], "done");
    let progress = named(&events, "tool.progress");
    let messages: Vec<&str> = progress
        .iter()
        .map(|e| e["payload"]["progress"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["step 1 of 3", "step 2 of 3", "step 3 of 3"]);
    assert!(
        progress
            .iter()
            .all(|e| e["payload"]["call_id"] == "p1" && e["payload"]["extension"] == "hostile")
    );
    let seq = |e: &Value| e["seq"].as_u64().unwrap();
    let done = named(&events, "tool.succeeded")[0];
    assert!(progress.iter().all(|e| seq(e) < seq(done)));
}

/// A UI extension that is not the chosen interactor answers "yes" to
/// every question at once; it must not approve anything. The console (the
/// default interactor) gets no answer from the idle terminal, so the
/// approval times out as a denial and the tool never runs.
#[test]
fn a_ui_that_is_not_the_interactor_cannot_approve() {
    let env = StudEnv::new();
    env.install("hostile");
    env.script(
        json!([{"text": "", "tool_calls": [call("hostile", json!({"mode": "ok"}))]}, {"text": "{{tool_results}}"}]),
        json!({"runtime": {"interactionTimeoutMs": 500}}),
    );
    install_auto_ui(&env, "evil-yes", true, 0);
    let (events, result, _) =
        run_with_idle_stdin(&env, &["run", "--output-format", "stream-json", "go"]);
    let answered = named(&events, "interaction.answered");
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_ne!(answered[0]["payload"]["by"], "evil-yes");
    assert_eq!(mode_decisions(&events)[0]["payload"]["decision"], "deny");
    assert!(named(&events, "tool.succeeded").is_empty());
    // The session went on: the model got the denial and answered.
    assert!(
        result["result"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
}

/// A UI that only observes (`rogue-ui`; the console is the interactor)
/// tries to steer the terminal at the first turn: OSC 52 (set the
/// clipboard), clear the screen, move the cursor, a DCS query, and a fake
/// approval prompt drawn over the line with `\r`; then it reads a line and
/// a key. What reaches the terminal is its text and its SGR styling only;
/// its reads get nothing, so the person's next line goes to the console
/// as the second prompt.
#[test]
fn a_ui_that_is_not_the_interactor_cannot_steer_the_terminal_or_read_input() {
    let env = StudEnv::new();
    env.install("rogue-ui");
    env.script(
        json!([{"text": "first: {{last_user}}"}, {"text": "second: {{last_user}}"}]),
        json!({}),
    );
    let out = env.run(&["run"], "hello\nmy secret line\n");
    let raw = out.stdout.clone();
    let text = String::from_utf8_lossy(&raw);
    let has = |needle: &[u8]| raw.windows(needle.len()).any(|w| w == needle);
    for (what, needle) in [
        ("OSC 52", &b"\x1b]52"[..]),
        ("clear screen", b"\x1b[2J"),
        ("cursor home", b"\x1b[H"),
        ("cursor up", b"\x1b[5A"),
        ("DCS", b"\x1bP"),
        ("carriage return", b"\r"),
    ] {
        assert!(!has(needle), "{what} reached the terminal:\n{text:?}");
    }
    assert!(
        has(b"\x1b[31mstyled by rogue\x1b[0m"),
        "SGR styling is kept: {text:?}"
    );
    assert!(
        text.contains("rogue read: line=None key=false"),
        "the rogue UI read input: {text}"
    );
    assert!(text.contains("second: my secret line"), "{text}");
}

/// On a terminal, Ctrl-C stops the running turn; the next turn starts the
/// count over, so a Ctrl-C in the second turn cancels it too instead of
/// quitting stud.
#[test]
fn each_turn_gets_its_own_first_ctrl_c() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::mpsc;
    let env = StudEnv::new();
    let dir = env.install("hostile");
    let manifest = std::fs::read_to_string(dir.join("extension.toml"))
        .unwrap()
        .replace("timeout-ms = 500", "timeout-ms = 600000");
    std::fs::write(dir.join("extension.toml"), manifest).unwrap();
    env.script(
        json!([
            {"text": "", "tool_calls": [call("hostile", json!({"mode": "loop"}))]},
            {"text": "", "tool_calls": [call("hostile", json!({"mode": "loop"}))]},
            {"text": "bye"}
        ]),
        json!({}),
    );
    let cmd = format!(
        "{} run --yolo --output-format stream-json",
        env!("CARGO_BIN_EXE_stud")
    );
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("STUD_HOME", env.home.path())
        .env("STUD_CACHE_DIR", common::shared_cache())
        .env_remove("RUST_BACKTRACE")
        .current_dir(env.project.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut screen = String::new();
    let wait_for = |needle: &str, screen: &mut String| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                screen.push_str(&line);
                screen.push('\n');
                if line.contains(needle) {
                    return;
                }
            }
        }
        panic!("never saw {needle}:\n{screen}");
    };
    for prompt in ["one", "two"] {
        stdin.write_all(format!("{prompt}\n").as_bytes()).unwrap();
        wait_for("\"tool.started\"", &mut screen);
        std::thread::sleep(Duration::from_millis(300));
        stdin.write_all(b"\x03").unwrap();
        wait_for("\"turn.end\"", &mut screen);
    }
    stdin.write_all(b"\x04").unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
        screen.push_str(&line);
        screen.push('\n');
    }
    assert!(
        !screen.contains("interrupted"),
        "the second Ctrl-C quit stud:\n{screen}"
    );
    assert!(
        screen.matches("\"status\":\"cancelled\"").count() >= 2,
        "{screen}"
    );
    let _ = status;
}

/// An answer cut off at the output limit is not presented as complete,
/// and a tool call in it (its arguments may be cut) does not run.
#[test]
fn a_response_cut_at_the_length_limit_is_not_complete() {
    let env = StudEnv::new();
    env.script(
        json!([{"text": "The answer is", "finish": "length", "tool_calls": [call("write", json!({"path": "x.txt", "content": "half"}))]}]),
        json!({}),
    );
    let out = env.run(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (events, result) = events(&out);
    assert_eq!(result["error_code"], "response-truncated", "{result}");
    assert!(result["error"].as_str().unwrap().contains("maxTokens"));
    assert!(!env.project.path().join("x.txt").exists());
    let render = named(&events, "render");
    assert_eq!(render[0]["payload"]["text"], "The answer is");
}

/// While the interactor waits for the person's answer, another UI's output
/// is held back: it cannot scroll the question away and print a question
/// of its own whose answer the interactor would read. It comes out once
/// the answer is in.
#[test]
fn another_uis_output_waits_while_a_question_is_open() {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let env = StudEnv::new();
    env.install("rogue-ui");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "a.txt", "content": "x"}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    let mut child = env
        .command(&["run"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("start stud");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().expect("lock").extend_from_slice(&buf[..n]);
            }
        })
    };
    let text = |seen: &Arc<Mutex<Vec<u8>>>| {
        String::from_utf8_lossy(&seen.lock().expect("lock")).into_owned()
    };
    stdin.write_all(b"go\n").expect("type");
    let asked = (0..300).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        text(&seen).contains("a.txt")
    });
    assert!(asked, "no question: {}", text(&seen));
    // The rogue UI got the event and wrote at once; it must not show yet.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let before = text(&seen);
    assert!(
        !before.contains("ROGUE-FAKE-PROMPT"),
        "another UI wrote while the question was open: {before}"
    );
    stdin.write_all(b"y\n").expect("type");
    drop(stdin);
    let _ = child.wait();
    let _ = reader.join();
    let after = text(&seen);
    assert!(after.contains("ROGUE-FAKE-PROMPT"), "{after}");
    assert_eq!(env.read("a.txt"), "x");
}
