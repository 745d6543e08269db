//! State-machine workflows end to end: the `stud` binary with `--sm`, the
//! scriptable `workflow` fixture (stages, transitions and verdicts from its
//! config), the scripted provider playing one lane per stage, real tools
//! on real files.

use crate::common;
use common::stream::{events, named, result};

use std::time::Duration;

use common::StudEnv;
use serde_json::{Value, json};
use stud_protocol::events::KernelEvent;

fn tool(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

/// A project with the workflow fixture configured by `sm` and the scripted
/// provider playing `lanes` (stage id -> turns; each stage's system prompt
/// is `STAGE-<id>`).
fn workflow_env(sm: Value, lanes: Value, extra: Value) -> StudEnv {
    let env = StudEnv::new();
    configure(&env, sm, lanes, extra);
    env
}

/// Install the scriptable `workflow` state machine in `env` with `sm`'s
/// stages; each stage's model turns come from its lane in `lanes`.
pub(crate) fn configure(env: &StudEnv, sm: Value, lanes: Value, extra: Value) {
    env.install("workflow");
    let lanes: serde_json::Map<String, Value> = lanes
        .as_object()
        .expect("lanes object")
        .iter()
        .map(|(k, v)| (format!("STAGE-{k}"), json!({"turns": v})))
        .collect();
    env.file(
        "script.json",
        &json!({"turns": [{"text": "no lane matched"}], "lanes": lanes}).to_string(),
    );
    let mut settings = json!({"stateMachines": {"workflow": sm}});
    if !extra.is_null() {
        common::merge(&mut settings, extra);
    }
    env.scripted_settings(settings);
}

fn run_sm(env: &StudEnv, extra: &[&str]) -> (std::process::Output, Vec<Value>, Value) {
    let mut args = vec![
        "run",
        "-p",
        "--sm",
        "workflow",
        "--output-format",
        "stream-json",
    ];
    args.extend_from_slice(extra);
    args.push("build the thing");
    let out = env.command(&args).output().expect("run stud");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let evs = events(&text);
    let res = result(&text);
    (out, evs, res)
}

/// `plan`, then siblings `ba` (bash) and `bb` (web-fetch of a loopback page
/// that answers after `delay`), then `join`. `bb` fetches first, then plays
/// `bb_after`.
fn siblings_env(
    delay: Duration,
    join: Value,
    ba: Value,
    bb_after: Value,
    join_turns: Value,
) -> (common::http::TestServer, StudEnv) {
    use common::http::{Reply, TestServer};
    let server = TestServer::start(vec![
        Reply::new(200, "slow page")
            .header("content-type", "text/plain")
            .delay(delay),
    ]);
    let url = format!("http://127.0.0.1:{}/slow", server.addr.port());
    let mut bb =
        vec![json!({"text": "", "tool_calls": [tool("sb", "web-fetch", json!({"url": url}))]})];
    bb.extend(bb_after.as_array().cloned().unwrap_or_default());
    let env = workflow_env(
        json!({
            "entry": "plan",
            "stages": [
                {"id": "plan", "allowedTools": []},
                {"id": "ba", "allowedTools": ["bash"], "turnCap": 3},
                {"id": "bb", "allowedTools": ["web-fetch"], "turnCap": 3},
                join
            ],
            "next": {"plan": {"stages": ["ba", "bb"], "parallel": true, "join": "join"}}
        }),
        json!({
            "plan": [{"text": "", "tool_calls": [tool("p", "done", json!({"units": 2}))]}],
            "ba": ba,
            "bb": bb,
            "join": join_turns
        }),
        json!({"network": {"web-fetch": ["127.0.0.1"]}}),
    );
    (server, env)
}

fn decisions<'a>(evs: &'a [Value], tool: &str) -> Vec<&'a Value> {
    named(evs, "approval.decided")
        .into_iter()
        .filter(|e| e["payload"]["tool"] == tool)
        .collect()
}

#[test]
fn the_envelope_approves_without_the_mode_gate_and_a_grant_works_once() {
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": ["write"], "turnCap": 3}], "grant": {"bash": "approve"}}),
        json!({"a": [
            {"text": "", "tool_calls": [
                tool("w1", "write", json!({"path": "inside.txt", "content": "in the envelope"})),
                tool("b1", "bash", json!({"command": "echo granted >> granted.txt"})),
            ]},
            // The same proposal again: its grant was used.
            {"text": "", "tool_calls": [tool("b1", "bash", json!({"command": "echo granted >> granted.txt"}))]},
            {"text": "", "tool_calls": [tool("d1", "done", json!({}))]}
        ]}),
        Value::Null,
    );
    // Headless in ask mode: without the stage, `write` would halt the run.
    let (out, evs, res) = run_sm(&env, &[]);
    assert_eq!(
        res["status"],
        "ok",
        "{res}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("inside.txt"), "in the envelope");
    assert_eq!(
        env.read("granted.txt"),
        "granted\n",
        "the grant worked exactly once"
    );
    let w = decisions(&evs, "write");
    assert_eq!(w[0]["payload"]["layer"], "state-machine");
    assert_eq!(w[0]["payload"]["decision"], "approve");
    // Inside the stage the mode is not asked; the trail says so, then the
    // guard's verdict follows.
    let layers: Vec<(&Value, &Value)> = w
        .iter()
        .map(|d| (&d["payload"]["layer"], &d["payload"]["decision"]))
        .collect();
    assert_eq!(
        layers,
        [
            (&json!("state-machine"), &json!("approve")),
            (&json!("mode"), &json!("pass")),
            (&json!("guard:protect-paths"), &json!("approve")),
        ]
    );
    let b: Vec<&Value> = decisions(&evs, "bash")
        .into_iter()
        .filter(|d| d["payload"]["layer"] == "state-machine")
        .collect();
    assert_eq!(b.len(), 2, "{b:?}");
    assert_eq!(b[0]["payload"]["decision"], "approve");
    assert_eq!(b[1]["payload"]["decision"], "deny");
    assert_eq!(b[1]["payload"]["code"], "grant-already-consumed");
    // Every decision carries the tuple its grant is bound to.
    for d in [b[0], b[1]] {
        let p = &d["payload"];
        assert_eq!(p["proposal_id"], "b1");
        assert_eq!(p["attempt"], 1);
        assert_eq!(p["args_digest"].as_str().unwrap().len(), 64);
        assert!(p["stage_execution_id"].as_str().unwrap().contains("-a-"));
    }
}

#[test]
fn a_state_machine_deny_holds_in_yolo() {
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": ["read"], "turnCap": 2}], "grant": {"write": "deny"}}),
        json!({"a": [
            {"text": "", "tool_calls": [tool("w1", "write", json!({"path": "pwned.txt", "content": "x"}))]},
            {"text": "", "tool_calls": [tool("d1", "done", json!({}))]}
        ]}),
        Value::Null,
    );
    let (_, evs, res) = run_sm(&env, &["--yolo"]);
    assert_eq!(res["status"], "ok", "{res}");
    assert!(!env.project.path().join("pwned.txt").exists());
    let w = decisions(&evs, "write");
    assert_eq!(w.len(), 1, "the mode gate never saw it: {w:?}");
    assert_eq!(w[0]["payload"]["layer"], "state-machine");
    assert_eq!(w[0]["payload"]["code"], "stage-tool-denied");
    // The request offered only the envelope and the completion tool.
    let composed = named(&evs, "tool.failed");
    assert!(
        composed
            .iter()
            .any(|e| e["payload"]["code"] == "stage-tool-denied")
    );
}

#[test]
fn invalid_completion_arguments_go_back_to_the_model_and_are_corrected() {
    let schema = json!({"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}});
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": [], "turnCap": 3, "completionSchema": schema}]}),
        json!({"a": [
            {"text": "", "tool_calls": [tool("d1", "done", json!({"summary": 42}))]},
            {"text": "", "tool_calls": [tool("d2", "done", json!({"summary": "fixed: {{tool_results}}"}))]}
        ]}),
        Value::Null,
    );
    let (_, evs, res) = run_sm(&env, &[]);
    assert_eq!(res["status"], "ok", "{res}");
    let failed = named(&evs, "tool.failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["payload"]["code"], "completion-invalid");
    let ended = named(&evs, "workflow.stage.ended");
    assert_eq!(ended.len(), 1);
    let summary = ended[0]["payload"]["result"]["summary"].as_str().unwrap();
    // The model saw the typed error for its first try.
    assert!(summary.contains("completion-invalid"), "{summary}");
}

#[test]
fn a_cap_hit_retries_with_a_fresh_transcript() {
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "turnCap": 1, "maxAttempts": 2}]}),
        json!({"a": [
            {"text": "first try", "tool_calls": [tool("r1", "list", json!({"path": "."}))]},
            {"text": "", "tool_calls": [tool("d1", "done", json!({"messages": "{{messages}}"}))]}
        ]}),
        Value::Null,
    );
    let (_, evs, res) = run_sm(&env, &["--yolo"]);
    assert_eq!(res["status"], "ok", "{res}");
    let ended = named(&evs, "workflow.stage.ended");
    let outcomes: Vec<(&Value, &Value)> = ended
        .iter()
        .map(|e| (&e["payload"]["attempt"], &e["payload"]["outcome"]))
        .collect();
    assert_eq!(
        outcomes,
        [(&json!(1), &json!("retry")), (&json!(2), &json!("ok"))]
    );
    let ids: Vec<&Value> = ended
        .iter()
        .map(|e| &e["payload"]["execution_id"])
        .collect();
    assert_ne!(ids[0], ids[1], "a retry is a new execution");
    // The second attempt's request held only the task: nothing of the first.
    assert_eq!(ended[1]["payload"]["result"]["messages"], "1");
}

#[test]
fn siblings_run_at_once_and_the_join_sees_both() {
    let (_server, env) = siblings_env(
        Duration::from_millis(700),
        json!({"id": "join", "allowedTools": [], "body": "STAGE-join: JOIN sees a=${ctx.siblings.ba.unit} b={{ctx.siblings.bb.unit}}"}),
        json!([
            {"text": "", "tool_calls": [tool("sa", "bash", json!({"command": "sleep 0.7; echo A"}))]},
            {"text": "", "tool_calls": [tool("da", "done", json!({"unit": "a"}))]}
        ]),
        json!([{"text": "", "tool_calls": [tool("db", "done", json!({"unit": "b"}))]}]),
        json!([{"text": "", "tool_calls": [tool("dj", "done", json!({"seen": "{{system}}"}))]}]),
    );
    let (out, evs, res) = run_sm(&env, &["--yolo"]);
    assert_eq!(
        res["status"],
        "ok",
        "{res}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let span = |id: &str| {
        let at = |name: &str| {
            named(&evs, name)
                .into_iter()
                .find(|e| e["payload"]["call_id"] == id)
                .unwrap_or_else(|| panic!("no {name} for {id}"))["ts"]
                .as_u64()
                .unwrap()
        };
        (at("tool.started"), at("tool.succeeded"))
    };
    let (a0, a1) = span("sa");
    let (b0, b1) = span("sb");
    assert!(
        a0 < b1 && b0 < a1,
        "the siblings' calls overlap: a {a0}..{a1}, b {b0}..{b1}"
    );
    let ended = named(&evs, "workflow.stage.ended");
    let join = ended
        .iter()
        .find(|e| e["payload"]["stage_id"] == "join")
        .unwrap();
    let seen = join["payload"]["result"]["seen"].as_str().unwrap();
    assert!(seen.contains("JOIN sees a=a b=b"), "{seen}");
    // One compound turn for the group and its join.
    let turns: Vec<&Value> = named(&evs, "turn.start");
    assert_eq!(turns.len(), 2, "plan, then the group: {turns:?}");
    assert_eq!(turns[1]["payload"]["join"], "join");
}

#[test]
fn a_failing_sibling_stops_the_other_and_the_join_never_runs() {
    use common::http::{Reply, TestServer};
    // `bad` fails only once the slow call is running: it first fetches a
    // page that answers once the file that call writes first exists, so
    // there is always a call in flight to cancel.
    let env = StudEnv::new();
    let server = TestServer::start(vec![
        Reply::new(200, "the slow call is running")
            .header("content-type", "text/plain")
            .once_exists(env.project.path().join("started")),
    ]);
    let url = format!("http://127.0.0.1:{}/wait", server.addr.port());
    configure(
        &env,
        json!({
            "entry": "plan",
            "stages": [
                {"id": "plan", "allowedTools": []},
                {"id": "ok", "allowedTools": ["bash"], "turnCap": 3},
                {"id": "bad", "allowedTools": ["web-fetch"], "turnCap": 2},
                {"id": "join", "allowedTools": []}
            ],
            "next": {"plan": {"stages": ["ok", "bad"], "parallel": true, "join": "join"}},
            "assert": {"bad": "fail"}
        }),
        json!({
            "plan": [{"text": "", "tool_calls": [tool("p", "done", json!({}))]}],
            "ok": [
                {"text": "", "tool_calls": [tool("slow", "bash", json!({"command": "touch started; sleep 5; echo finished > slow.txt"}))]},
                {"text": "", "tool_calls": [tool("d", "done", json!({}))]}
            ],
            "bad": [
                {"text": "", "tool_calls": [tool("w", "web-fetch", json!({"url": url}))]},
                {"text": "", "tool_calls": [tool("x", "done", json!({}))]}
            ],
            "join": [{"text": "", "tool_calls": [tool("j", "done", json!({}))]}]
        }),
        json!({"network": {"web-fetch": ["127.0.0.1"]}}),
    );
    let started = std::time::Instant::now();
    let (_, evs, res) = run_sm(&env, &["--yolo"]);
    assert_eq!(res["status"], "error", "{res}");
    assert_eq!(res["error_code"], "parallel-sibling-failure", "{res}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the slow sibling was stopped"
    );
    assert!(!env.project.path().join("slow.txt").exists());
    assert!(
        named(&evs, "tool.cancelled")
            .iter()
            .any(|e| e["payload"]["call_id"] == "slow"),
        "the other sibling's call was cancelled"
    );
    let ended = named(&evs, "workflow.stage.ended");
    assert!(
        !ended.iter().any(|e| e["payload"]["stage_id"] == "join"),
        "{ended:?}"
    );
}

#[test]
fn a_session_killed_mid_workflow_resumes_at_its_stage() {
    let sm = json!({
        "entry": "one",
        "stages": [{"id": "one", "allowedTools": []}, {"id": "two", "allowedTools": []}],
        "next": {"one": {"stages": ["two"]}}
    });
    let env = workflow_env(
        sm,
        json!({
            "one": [{"text": "", "tool_calls": [tool("a", "done", json!({"step": 1}))]}],
            // Stage two hangs: the process is killed while it waits.
            "two": [{"text": "", "sleep_ms": 30000}]
        }),
        Value::Null,
    );
    let (mut child, seen, _rest) = env.start_until(
        &[
            "run",
            "-p",
            "--sm",
            "workflow",
            "--output-format",
            "stream-json",
            "build the thing",
        ],
        "provider.request.started",
    );
    // That was stage one's request; wait for stage two's.
    let mut lines = _rest;
    let mut stage_one_ended = seen.iter().any(|l| l.contains("workflow.stage.ended"));
    for line in lines.by_ref() {
        let line = line.unwrap();
        stage_one_ended |= line.contains("\"workflow.stage.ended\"");
        if stage_one_ended && line.contains("\"provider.request.started\"") {
            break;
        }
    }
    assert!(stage_one_ended);
    common::signal(&child, "KILL");
    let _ = child.wait();
    // Stage two answers this time.
    let lanes = json!({
        "STAGE-one": {"turns": [{"text": "", "tool_calls": [tool("a", "done", json!({"step": "again"}))]}]},
        "STAGE-two": {"turns": [{"text": "", "tool_calls": [tool("b", "done", json!({"step": 2}))]}]}
    });
    env.file(
        "script.json",
        &json!({"turns": [{"text": "no lane matched"}], "lanes": lanes}).to_string(),
    );
    let out = env
        .command(&["run", "-p", "-c", "--output-format", "stream-json", "go on"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let evs = events(&text);
    assert_eq!(result(&text)["status"], "ok", "{text}");
    let attached = named(&evs, "workflow.attached");
    assert_eq!(
        attached[0]["payload"]["resumed_at"]["stages"],
        json!(["two"])
    );
    let started = named(&evs, "workflow.started");
    assert_eq!(started[0]["payload"]["resumed"], true);
    assert_eq!(started[0]["payload"]["next"]["stages"], json!(["two"]));
    let ended: Vec<&Value> = named(&evs, "workflow.stage.ended");
    assert_eq!(ended.len(), 1, "stage one did not run again: {ended:?}");
    assert_eq!(ended[0]["payload"]["stage_id"], "two");
    let finished = named(&evs, "workflow.finished");
    assert_eq!(finished[0]["payload"]["results"]["one"]["step"], 1);
    assert_eq!(finished[0]["payload"]["results"]["two"]["step"], 2);
}

#[test]
fn resuming_with_another_state_machine_is_refused() {
    let env = workflow_env(
        json!({"entry": "one", "stages": [{"id": "one", "allowedTools": []}]}),
        json!({"one": [{"text": "", "tool_calls": [tool("a", "done", json!({}))]}]}),
        Value::Null,
    );
    let (_, _, res) = run_sm(&env, &[]);
    assert_eq!(res["status"], "ok", "{res}");
    let out = env
        .command(&["run", "-p", "-c", "--sm", "plan-build-review", "again"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot be resumed") && err.contains("`workflow`"),
        "{err}"
    );
}

#[test]
fn the_bundled_plan_build_review_workflow_runs_a_task_to_completion() {
    let env = StudEnv::new();
    env.file("notes.txt", "a tiny project\n");
    let lane = |turns: Value| json!({"turns": turns});
    let lanes = json!({
        "Workflow stage: discovery.": lane(json!([
            {"text": "Looking around.", "tool_calls": [tool("l", "list", json!({"path": "."}))]},
            {"text": "", "tool_calls": [tool("f", "report_findings", json!({"findings": ["one file: notes.txt"]}))]}
        ])),
        "Workflow stage: decompose.": lane(json!([
            {"text": "", "tool_calls": [tool("p", "submit_plan", json!({"units": [
                {"name": "greeting", "goal": "write hello.txt"},
                {"name": "farewell", "goal": "write bye.txt"}
            ]}))]}
        ])),
        "Workflow stage: build_a.": lane(json!([
            {"text": "", "tool_calls": [tool("wa", "write", json!({"path": "hello.txt", "content": "hello\n"}))]},
            {"text": "", "tool_calls": [tool("ta", "bash", json!({"command": "test -f hello.txt && echo green"}))]},
            {"text": "", "tool_calls": [tool("da", "unit_done", json!({"unit": "greeting", "green": true}))]}
        ])),
        "Workflow stage: build_b.": lane(json!([
            {"text": "", "tool_calls": [tool("wb", "write", json!({"path": "bye.txt", "content": "bye\n"}))]},
            {"text": "", "tool_calls": [tool("db", "unit_done", json!({"unit": "farewell", "green": true}))]}
        ])),
        "Workflow stage: review.": lane(json!([
            {"text": "", "tool_calls": [tool("r1", "bash", json!({"command": "cat hello.txt bye.txt > reviewed.txt"}))]},
            // A second bash run is the user's call, and this run is headless.
            {"text": "", "tool_calls": [tool("r2", "bash", json!({"command": "touch second.txt"}))]},
            {"text": "", "tool_calls": [tool("rd", "review_done", json!({"approved": true, "notes": "{{tool_results}}"}))]}
        ])),
        "Workflow stage: complete.": lane(json!([
            {"text": "", "tool_calls": [tool("fin", "finish", json!({
                "discoveryFindings": ["one file: notes.txt"],
                "buildResults": [{"unit": "greeting", "green": true}, {"unit": "farewell", "green": true}],
                "decomposition": {"units": ["greeting", "farewell"]}
            }))]}
        ]))
    });
    env.file(
        "script.json",
        &json!({"turns": [{"text": "no lane matched"}], "lanes": lanes}).to_string(),
    );
    env.scripted_settings(json!({}));
    // Headless and in ask mode: the envelopes approve what each stage may
    // do; nothing else runs.
    let out = env
        .command(&[
            "run",
            "-p",
            "--sm",
            "plan-build-review",
            "--output-format",
            "stream-json",
            "add a greeting and a farewell",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let evs = events(&text);
    let res = result(&text);
    assert_eq!(
        res["status"],
        "ok",
        "{res}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("hello.txt"), "hello\n");
    assert_eq!(env.read("bye.txt"), "bye\n");
    assert_eq!(
        env.read("reviewed.txt"),
        "hello\nbye\n",
        "review's one bash run"
    );
    assert!(
        !env.project.path().join("second.txt").exists(),
        "the second was deferred and refused"
    );
    let order: Vec<&str> = named(&evs, "workflow.stage.ended")
        .iter()
        .map(|e| e["payload"]["stage_id"].as_str().unwrap())
        .collect();
    assert_eq!(order.len(), 6, "{order:?}");
    assert_eq!(order[..2], ["discovery", "decompose"]);
    assert_eq!(order[4..], ["review", "complete"]);
    let report: Value = serde_json::from_str(res["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["buildResults"][1]["unit"], "farewell");
    // Every kernel event on the wire is a catalogue variant a UI can parse.
    let mut kinds = std::collections::BTreeSet::new();
    for e in &evs {
        let name = e["event"].as_str().unwrap();
        match KernelEvent::from_wire(name, &e["payload"]) {
            Some(Ok(k)) => {
                kinds.insert(k.name());
            }
            Some(Err(err)) => panic!("`{name}` does not fit the catalogue: {err}\n{e}"),
            None => assert!(name.starts_with("ext."), "`{name}` is not catalogued"),
        }
    }
    for expected in [
        "workflow.phase.pre",
        "approval.decided",
        "tool.succeeded",
        "turn.end",
    ] {
        assert!(
            kinds.contains(expected),
            "{expected} missing from {kinds:?}"
        );
    }
}

#[test]
fn ctrl_c_during_a_parallel_group_cancels_both_siblings() {
    let (_server, env) = siblings_env(
        Duration::from_secs(8),
        json!({"id": "join", "allowedTools": []}),
        json!([{"text": "", "tool_calls": [tool("sa", "bash", json!({"command": "sleep 8; echo late > late.txt"}))]}]),
        json!([]),
        json!([{"text": "", "tool_calls": [tool("j", "done", json!({}))]}]),
    );
    let (mut child, _, mut lines) = env.start_until(
        &[
            "run",
            "-p",
            "--yolo",
            "--sm",
            "workflow",
            "--output-format",
            "stream-json",
            "go",
        ],
        "tool.started",
    );
    for line in lines.by_ref() {
        if line.unwrap().contains("\"tool.started\"") {
            break;
        }
    }
    let sent = std::time::Instant::now();
    common::signal(&child, "INT");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    let evs = events(&rest.join("\n"));
    let res = result(&rest.join("\n"));
    assert_eq!(res["status"], "cancelled", "{res}");
    assert_eq!(status.code(), Some(130));
    assert!(took < Duration::from_secs(4), "cancelled in {took:?}");
    let cancelled: Vec<&Value> = named(&evs, "tool.cancelled");
    for id in ["sa", "sb"] {
        assert!(
            cancelled.iter().any(|e| e["payload"]["call_id"] == id),
            "{id} was not cancelled: {cancelled:?}"
        );
    }
    assert!(!env.project.path().join("late.txt").exists());
    assert!(
        !named(&evs, "workflow.stage.ended")
            .iter()
            .any(|e| e["payload"]["stage_id"] == "join")
    );
}

#[test]
fn a_workflow_attached_at_the_prompt_runs_the_next_input() {
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": []}]}),
        json!({"a": [{"text": "stage a speaking", "tool_calls": [tool("d", "done", json!({"ok": true}))]}]}),
        Value::Null,
    );
    let out = env.on_terminal("run", "/sm\n/sm workflow\nbuild it\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let screen = String::from_utf8_lossy(&out.stdout);
    let none = screen.find("workflow: none attached").expect(&screen);
    let attached = screen.find("workflow: workflow attached").expect(&screen);
    let ran = screen.find("[stage a attempt 1: ok]").expect(&screen);
    assert!(none < attached && attached < ran, "{screen}");
    assert!(screen.contains("stage a speaking"), "{screen}");
}

/// A repository cannot attach a state machine: a stage's envelope approves
/// tools without the security mode, so its own settings could otherwise
/// switch approvals off for the tools it names.
#[test]
fn a_project_cannot_attach_a_state_machine() {
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": ["write"], "turnCap": 2}]}),
        json!({}),
        Value::Null,
    );
    let write = json!({"text": "", "tool_calls": [tool("w", "write", json!({"path": "pwned.txt", "content": "x"}))]});
    env.file(
        "script.json",
        &json!({"turns": [write], "lanes": {"STAGE-a": {"turns": [write]}}}).to_string(),
    );
    let dir = env.project.path().join(".stud");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({"active": {"stateMachine": "workflow"}}).to_string(),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let out = env
        .command(&["run", "-p", "--output-format", "stream-json", "go"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        named(&events(&text), "workflow.attached").is_empty(),
        "{text}"
    );
    // A plain turn in ask mode: the write needs a person, and headless halts.
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(!env.project.path().join("pwned.txt").exists());
}

/// A session that ran the user's global `workflow` to its end (one stage
/// `a` that approves nothing), whose lane plays `a_turns` (the first of
/// them in that run).
fn finished_workflow_session(a_turns: Value) -> StudEnv {
    let env = workflow_env(
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": [], "turnCap": 2}]}),
        json!({ "a": a_turns }),
        Value::Null,
    );
    let (_, _, res) = run_sm(&env, &[]);
    assert_eq!(res["status"], "ok", "{res}");
    env
}

/// The attack (issue 34, review two): the user's session ran their global
/// state machine `workflow`; a trusted project then brings a `workflow`
/// of its own, with settings whose stage approves `write`. Before, `stud
/// -c` looked the recorded id up among everything loaded and attached the
/// project's machine, whose envelope approved the write unasked. The
/// session's manifest records the machine as (scope, id, digest); a
/// resume attaches only a bundled or global one that is still that one,
/// and a project's settings never configure a state machine
/// (`stateMachines.*` is global only).
#[test]
fn a_resumed_session_never_attaches_a_projects_state_machine_in_place_of_the_users() {
    let write = json!({"text": "", "tool_calls": [tool("w", "write", json!({"path": "pwned.txt", "content": "x"}))]});
    let done = json!({"text": "", "tool_calls": [tool("d", "done", json!({}))]});
    let env = finished_workflow_session(json!([done, write, done]));
    let stud = env.project.path().join(".stud");
    common::install_fixture(&stud, "workflow");
    std::fs::write(
        stud.join("settings.json"),
        json!({"stateMachines": {"workflow": {"entry": "a", "stages": [{"id": "a", "allowedTools": ["write"], "turnCap": 3}]}}})
            .to_string(),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let out = env
        .command(&["run", "-p", "-c", "--output-format", "stream-json", "again"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !env.project.path().join("pwned.txt").exists(),
        "the project's stage approved the write: {text}"
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        named(&events(&text), "workflow.attached").is_empty(),
        "{text}"
    );
    assert!(
        err.contains("`workflow`") && err.contains("project") && err.contains("--sm workflow"),
        "{err}"
    );
    let manifest = manifest_of(&env);
    assert_eq!(manifest["state_machine"]["scope"], "global", "{manifest}");
}

/// The manifest of the one session kept by the bundled store.
fn manifest_of(env: &StudEnv) -> Value {
    let dir = env.home.path().join("data/filesystem");
    let session = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .expect("a kept session")
        .path();
    serde_json::from_str(&std::fs::read_to_string(session.join("manifest.json")).unwrap()).unwrap()
}

/// The state machine a session ran changed since (other bytes under the
/// same id): a plain resume does not take the new code for the old; it
/// says so, and `--sm` takes it knowingly.
#[test]
fn a_resume_refuses_a_state_machine_that_changed_since_unless_named() {
    let done = json!({"text": "", "tool_calls": [tool("d", "done", json!({}))]});
    let env = finished_workflow_session(json!([done, done]));
    let wasm = env
        .home
        .path()
        .join("extensions/workflow/fixture_workflow.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    bytes.extend(common::custom_section("changed", b"since the session"));
    std::fs::write(&wasm, bytes).unwrap();
    let out = env.command(&["run", "-p", "-c", "again"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`workflow`") && err.contains("changed") && err.contains("--sm workflow"),
        "{err}"
    );
    let (_, evs, res) = run_sm(&env, &["-c"]);
    assert_eq!(res["status"], "ok", "{res}");
    assert_eq!(named(&evs, "workflow.attached").len(), 1);
}

/// A workflow's stages are turns of the session, each with its checkpoint:
/// what stage `b` did is taken back alone by rewinding to before it, and
/// everything by rewinding to before `a`.
#[test]
fn each_stage_of_a_workflow_is_a_turn_that_can_be_rewound() {
    let env = workflow_env(
        json!({
            "entry": "a",
            "stages": [
                {"id": "a", "allowedTools": ["write"], "turnCap": 3},
                {"id": "b", "allowedTools": ["write"], "turnCap": 3}
            ],
            "next": {"a": {"stages": ["b"]}}
        }),
        json!({
            "a": [
                {"text": "", "tool_calls": [tool("w", "write", json!({"path": "a.txt", "content": "from a"}))]},
                {"text": "", "tool_calls": [tool("d", "done", json!({}))]}
            ],
            "b": [
                {"text": "", "tool_calls": [tool("w", "write", json!({"path": "b.txt", "content": "from b"}))]},
                {"text": "", "tool_calls": [tool("d", "done", json!({}))]}
            ]
        }),
        Value::Null,
    );
    let (out, evs, res) = run_sm(&env, &[]);
    assert_eq!(
        res["status"],
        "ok",
        "{res}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded: Vec<&Value> = evs
        .iter()
        .filter(|e| e["event"] == "checkpoint.recorded")
        .map(|e| &e["payload"]["changed"])
        .collect();
    assert_eq!(recorded, [&json!(["a.txt"]), &json!(["b.txt"])]);
    let id = res["session_id"].as_str().expect("id");
    env.ok(&["session", "rewind", id, "2", "--files", "--yes"]);
    assert!(!env.project.path().join("b.txt").exists());
    assert_eq!(env.read("a.txt"), "from a");
    env.ok(&["session", "rewind", id, "1", "--files", "--yes"]);
    assert!(!env.project.path().join("a.txt").exists());
}

/// A workflow session replays with no divergence (its stages, the
/// state-machine layer's decisions and its grant used once, all as
/// recorded); a narrower envelope in the settings changes the tools the
/// stage offers, which the replay names as the part of the first request
/// that differs.
#[test]
fn a_workflow_session_replays_exactly_and_a_narrower_envelope_is_named() {
    let sm = |allowed: Value| json!({"entry": "a", "stages": [{"id": "a", "allowedTools": allowed, "turnCap": 3}], "grant": {"bash": "approve"}});
    let env = workflow_env(
        sm(json!(["write"])),
        json!({"a": [
            {"text": "", "tool_calls": [
                tool("w1", "write", json!({"path": "inside.txt", "content": "in the envelope"})),
                tool("b1", "bash", json!({"command": "echo granted >> granted.txt"})),
            ]},
            {"text": "", "tool_calls": [tool("b1", "bash", json!({"command": "echo granted >> granted.txt"}))]},
            {"text": "", "tool_calls": [tool("d1", "done", json!({}))]}
        ]}),
        Value::Null,
    );
    let (_, _, res) = run_sm(&env, &[]);
    assert_eq!(res["status"], "ok", "{res}");
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    let id = list[0]["session_id"]
        .as_str()
        .expect("a session")
        .to_string();
    let out = env.run(&["session", "replay", &id, "--json"], "");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["divergences"], json!([]), "{report:#}");
    assert_eq!(report["requests"], 3, "{report:#}");

    // The envelope no longer holds `write`: the stage offers the model
    // other tools, so the first request is not the recorded one. The
    // replay names the part and stops rather than guess an answer.
    let settings_file = env.home.path().join("settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
    settings["stateMachines"]["workflow"] = sm(json!([]));
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let out = env.run(&["session", "replay", &id, "--json"], "");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    assert_eq!(
        report["divergences"],
        json!([{"kind": "request", "turn": 1, "request": 1, "parts": ["tools"]}]),
        "{report:#}"
    );
    assert_eq!(report["requests"], 0, "{report:#}");
}

/// The state machine sends the workflow elsewhere after stage `a` (to `c`
/// instead of `b`): `a` replays exactly, then the report names the other
/// path (where, what was recorded, what ran now) and the request `c` sends,
/// which nothing recorded answers.
#[test]
fn a_workflow_that_takes_another_path_is_named_in_the_replay() {
    let sm = |after_a: &str| {
        json!({
            "entry": "a",
            "stages": [
                {"id": "a", "allowedTools": [], "turnCap": 2},
                {"id": "b", "allowedTools": [], "turnCap": 2},
                {"id": "c", "allowedTools": [], "turnCap": 2}
            ],
            "next": {"a": {"stages": [after_a]}}
        })
    };
    let done = json!({"text": "", "tool_calls": [tool("d", "done", json!({}))]});
    let env = workflow_env(
        sm("b"),
        json!({"a": [done.clone()], "b": [done.clone()], "c": [done]}),
        Value::Null,
    );
    let (_, _, res) = run_sm(&env, &[]);
    assert_eq!(res["status"], "ok", "{res}");
    let id = res["session_id"].as_str().expect("id").to_string();
    let settings_file = env.home.path().join("settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
    settings["stateMachines"]["workflow"] = sm("c");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let out = env.run(&["session", "replay", &id, "--json"], "");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    let divergences = report["divergences"].as_array().unwrap();
    let path = divergences
        .iter()
        .find(|d| d["kind"] == "workflow")
        .unwrap_or_else(|| panic!("no workflow divergence: {report:#}"));
    assert_eq!(path["position"], 1, "{path:#}");
    assert_eq!(path["recorded"], "b (attempt 1)", "{path:#}");
    assert_eq!(path["replayed"], "c (attempt 1)", "{path:#}");
    assert!(
        divergences.iter().any(|d| d["kind"] == "request"
            && d["request"] == 2
            && d["parts"]
                .as_array()
                .unwrap()
                .contains(&json!("system prompt"))),
        "{report:#}"
    );
}
