//! Subagents end to end: the `stud` binary, agent definitions in the
//! user's `~/.stud/agents`, the scripted provider serving the parent and
//! each child (a lane per agent, chosen by a marker in the agent's system
//! prompt), real tools on real files.

use crate::common;
use common::stream::{events, named, result};

use std::io::BufRead;
use std::time::{Duration, Instant};

use common::StudEnv;
use common::http::{Reply, TestServer};
use serde_json::{Value, json};

fn tool(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

fn task(id: &str, agent: &str, prompt: &str) -> Value {
    tool(
        id,
        "task",
        json!({"agent": agent, "description": format!("{agent} job"), "prompt": prompt}),
    )
}

/// Write `~/.stud/agents/<name>.md`; the body starts with the lane marker
/// `AGENT-<NAME>`.
fn agent(env: &StudEnv, name: &str, front: &str) {
    let dir = env.home.path().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!(
            "---\nname: {name}\ndescription: the {name} agent\n{front}---\nAGENT-{} You do one job.\n",
            name.to_uppercase()
        ),
    )
    .unwrap();
}

/// The script: `main` for the parent, one lane per agent (by its marker;
/// a key with a space is a phrase of the agent's prompt).
fn script(env: &StudEnv, main: Value, lanes: &[(&str, Value)], extra: Value) {
    let key = |name: &str| {
        if name.contains(' ') {
            name.to_string()
        } else {
            format!("AGENT-{}", name.to_uppercase())
        }
    };
    let lanes: serde_json::Map<String, Value> = lanes
        .iter()
        .map(|(name, turns)| (key(name), json!({"turns": turns})))
        .collect();
    env.file(
        "script.json",
        &json!({"turns": main, "lanes": lanes}).to_string(),
    );
    env.scripted_settings(extra);
}

fn run(env: &StudEnv, extra: &[&str]) -> (std::process::Output, Vec<Value>, Value) {
    let mut args = vec!["run", "-p", "--output-format", "stream-json"];
    args.extend_from_slice(extra);
    args.push("delegate it");
    let out = env.command(&args).output().expect("run stud");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let res = if out.status.code() == Some(3) {
        Value::Null
    } else {
        result(&text)
    };
    (out, events(&text), res)
}

/// The parent hands `agent` one task; the child makes `call`, then
/// reports what it saw; the parent answers with the `task` result. Run in
/// yolo mode; it must succeed.
fn delegate_once(env: &StudEnv, agent: &str, call: Value) -> (Vec<Value>, Value) {
    script(
        env,
        json!([
            {"text": "", "tool_calls": [task("t", agent, "do the job")]},
            {"text": "parent got: {{tool_results}}"}
        ]),
        &[(
            agent,
            json!([
                {"text": "", "tool_calls": [call]},
                {"text": "child saw: {{tool_results}}"}
            ]),
        )],
        json!({}),
    );
    let (out, evs, res) = run(env, &["--yolo"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (evs, res)
}

/// Two `task` calls in one response run at the same time: alpha's bash
/// waits until beta's web fetch has reached the server, and the server
/// answers beta only once alpha's bash has started; run one after the
/// other, each would give up. Both answers reach the parent's next
/// request; the cost of the children rolls up into the parent's turn;
/// `session show` prints the tree.
#[test]
fn two_tasks_run_in_parallel_and_both_answers_reach_the_parent() {
    let env = StudEnv::new();
    let started = env.project.path().join("alpha-started");
    let fetched = env.project.path().join("beta-fetching");
    let server = TestServer::start(vec![
        Reply::new(200, "beta saw alpha running")
            .header("content-type", "text/plain")
            .once_exists(started.clone()),
    ]);
    let url = format!("http://127.0.0.1:{}/beta", server.addr.port());
    // Tell alpha's bash once beta's request is at the server.
    let watcher = {
        let fetched = fetched.clone();
        let requests = server.requests_handle();
        std::thread::spawn(move || {
            for _ in 0..1000 {
                if !requests.lock().unwrap().is_empty() {
                    std::fs::write(&fetched, "").unwrap();
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    agent(&env, "alpha", "tools: [bash]\n");
    agent(&env, "beta", "tools: [web-fetch]\n");
    let wait = "touch alpha-started; for i in $(seq 400); do [ -e beta-fetching ] && break; sleep 0.05; done; if [ -e beta-fetching ]; then echo overlap-seen; else echo no-overlap; fi";
    script(
        &env,
        json!([
            {"text": "", "tool_calls": [task("ta", "alpha", "wait for beta"), task("tb", "beta", "fetch the page")]},
            {"text": "parent got: {{tool_results}}"}
        ]),
        &[
            (
                "alpha",
                json!([
                    {"text": "", "tool_calls": [tool("a1", "bash", json!({"command": wait}))]},
                    {"text": "alpha says {{tool_results}}"}
                ]),
            ),
            (
                "beta",
                json!([
                    {"text": "", "tool_calls": [tool("b1", "web-fetch", json!({"url": url}))]},
                    {"text": "beta says {{tool_results}}"}
                ]),
            ),
        ],
        json!({
            "network": {"web-fetch": ["127.0.0.1"]},
            "pricing": {"scripted": {"input": 1000000.0, "output": 1000000.0}}
        }),
    );
    let (out, evs, res) = run(&env, &["--yolo"]);
    watcher.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer = res["result"].as_str().unwrap();
    assert!(answer.contains("alpha says overlap-seen"), "{answer}");
    assert!(
        answer.contains("beta says") && answer.contains("beta saw alpha running"),
        "{answer}"
    );
    let started = named(&evs, "agent.started");
    let finished = named(&evs, "agent.finished");
    assert_eq!(started.len(), 2);
    assert_eq!(finished.len(), 2);
    assert!(
        finished.iter().all(|f| f["payload"]["status"] == "ok"),
        "{finished:?}"
    );
    // Both started before either finished.
    let last_start = started
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .max()
        .unwrap();
    let first_end = finished
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(last_start < first_end);
    // Events carry the agent path.
    for path in ["main/alpha", "main/beta"] {
        assert!(
            evs.iter()
                .any(|e| e["event"] == "tool.succeeded" && e["payload"]["agent"] == path),
            "no tool event of {path}"
        );
    }
    // Cost rolls up: the parent's turn costs its own tokens plus its
    // children's (one dollar a token).
    let end = named(&evs, "turn.end")
        .into_iter()
        .find(|e| e["payload"].get("agent").is_none())
        .unwrap();
    let u = &end["payload"]["usage"];
    let own = (u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap()) as f64;
    let children: f64 = finished
        .iter()
        .map(|f| f["payload"]["cost_usd"].as_f64().unwrap())
        .sum();
    assert!(children > 0.0);
    let turn_cost = end["payload"]["cost_usd"].as_f64().unwrap();
    assert!(
        (turn_cost - (own + children)).abs() < 1e-6,
        "{turn_cost} vs {own} + {children}"
    );
    assert!((end["payload"]["session_cost_usd"].as_f64().unwrap() - turn_cost).abs() < 1e-6);
    // The tree.
    let id = res["session_id"].as_str().unwrap();
    let show = env.ok(&["session", "show", id]);
    assert!(show.contains("agents:"), "{show}");
    for (path, call) in [("main/alpha", "ta"), ("main/beta", "tb")] {
        let line = show
            .lines()
            .find(|l| l.trim_start().starts_with(path))
            .unwrap_or_else(|| panic!("no {path} in {show}"));
        assert!(line.contains(&format!("(call {call})")), "{line}");
    }
    // Children are kept with their parent, not offered on their own.
    let list = env.ok(&["session", "list"]);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains("(+2 agent sessions)"), "{list}");
    // The session replays with no divergence: each child's requests are
    // answered within its agent path, in whatever order the two run.
    let out = env.run(&["session", "replay", id, "--json"], "");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["divergences"], json!([]), "{report:#}");
    assert_eq!(report["requests"], 6, "{report:#}");
    let list = env.ok(&["session", "list"]);
    assert!(
        list.contains("(+2 agent sessions)"),
        "the replay kept sessions: {list}"
    );
}

/// A child only has the tools its definition lists (and its parent has):
/// asking for another gets "unknown tool", which it sees and reports.
#[test]
fn a_child_asking_for_a_tool_its_definition_lacks_gets_unknown_tool() {
    let env = StudEnv::new();
    agent(&env, "reader", "tools: Read, Grep\n");
    let (evs, res) = delegate_once(
        &env,
        "reader",
        tool("r1", "bash", json!({"command": "touch ran"})),
    );
    let answer = res["result"].as_str().unwrap();
    assert!(answer.contains("unknown tool `bash`"), "{answer}");
    assert!(!env.project.path().join("ran").exists());
    let started = named(&evs, "agent.started");
    assert_eq!(started[0]["payload"]["tools"], json!(["grep", "read"]));
}

/// Under an `ask` parent a child's `bash` needs an approval of its own;
/// headless, nobody can give it: the run halts with exit 3 and nothing ran.
#[test]
fn a_child_under_an_ask_parent_cannot_run_bash_headless() {
    let env = StudEnv::new();
    script(
        &env,
        json!([
            {"text": "", "tool_calls": [task("t", "general", "make a file")]},
            {"text": "never"}
        ]),
        &[(
            "sub-agent of a coding assistant",
            json!([
                {"text": "", "tool_calls": [tool("g1", "bash", json!({"command": "touch ran"}))]},
                {"text": "done"}
            ]),
        )],
        json!({}),
    );
    let (out, evs, _) = run(&env, &[]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!env.project.path().join("ran").exists());
    let halt = named(&evs, "approval.decided")
        .into_iter()
        .find(|e| e["payload"]["tool"] == "bash" && e["payload"]["layer"] == "interaction")
        .expect("the child's bash was decided");
    assert_eq!(halt["payload"]["decision"], "halt");
    assert_eq!(halt["payload"]["agent"], "main/general");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("permission-required"), "{stderr}");
}

/// The default depth limit (2) refuses a grandchild: the child's `task`
/// call is refused and says why; the child and the parent go on.
#[test]
fn the_depth_limit_refuses_a_grandchild() {
    let env = StudEnv::new();
    agent(&env, "nester", "");
    let (evs, res) = delegate_once(&env, "nester", task("t2", "nester", "deeper still"));
    let answer = res["result"].as_str().unwrap();
    assert!(answer.contains("depth limit of 2"), "{answer}");
    assert_eq!(named(&evs, "agent.started").len(), 1);
    // The child was not offered `task` at all.
    let started = named(&evs, "agent.started");
    assert!(
        !started[0]["payload"]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("task"))
    );
}

/// A child that fails (here: its bound of one request is not enough)
/// becomes the `task` call's error result; the parent's turn goes on.
#[test]
fn a_failing_child_is_an_error_result_and_the_parent_goes_on() {
    let env = StudEnv::new();
    agent(&env, "brief", "maxIterations: 1\n");
    let (evs, res) = delegate_once(
        &env,
        "brief",
        tool("b", "read", json!({"path": "nothing.txt"})),
    );
    assert_eq!(res["status"], "ok");
    let answer = res["result"].as_str().unwrap();
    assert!(answer.contains("parent got:"), "{answer}");
    assert!(
        answer.contains("agent `brief` (main/brief) stopped"),
        "{answer}"
    );
    let failed = named(&evs, "tool.failed")
        .into_iter()
        .find(|e| e["payload"]["tool"] == "task")
        .expect("the task call failed");
    assert_eq!(failed["payload"]["code"], "agent-iterations-exhausted");
    assert_eq!(
        named(&evs, "agent.finished")[0]["payload"]["status"],
        "error"
    );
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) && !text.contains("agents_e2e") {
            found.push(text);
        }
    }
    found
}

/// Ctrl-C while two children are running stops both at once: the turn
/// ends cancelled within the cancel grace, both children end cancelled,
/// and the child's shell command is not left running.
#[test]
fn ctrl_c_cancels_every_running_child() {
    let env = StudEnv::new();
    let server = TestServer::start(vec![
        Reply::new(200, "too late").delay(Duration::from_secs(60)),
    ]);
    let url = format!("http://127.0.0.1:{}/slow", server.addr.port());
    agent(&env, "sleeper", "tools: [bash]\n");
    agent(&env, "fetcher", "tools: [web-fetch]\n");
    let marker = format!("sleep 4{}.5", std::process::id() % 1000);
    script(
        &env,
        json!([
            {"text": "", "tool_calls": [task("ta", "sleeper", "sleep"), task("tb", "fetcher", "fetch")]},
            {"text": "never"}
        ]),
        &[
            (
                "sleeper",
                json!([
                    {"text": "", "tool_calls": [tool("s", "bash", json!({"command": marker}))]},
                    {"text": "never"}
                ]),
            ),
            (
                "fetcher",
                json!([
                    {"text": "", "tool_calls": [tool("f", "web-fetch", json!({"url": url}))]},
                    {"text": "never"}
                ]),
            ),
        ],
        json!({"network": {"web-fetch": ["127.0.0.1"]}}),
    );
    let mut child = env
        .command(&[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ])
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut running = std::collections::BTreeSet::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v["event"] == "tool.started"
            && let Some(path) = v["payload"]["agent"].as_str()
        {
            running.insert(path.to_string());
        }
        seen.push(line);
        if running.len() == 2 {
            break;
        }
    }
    assert_eq!(running.len(), 2, "{seen:?}");
    // The fetch is at the server, and the sleep has started.
    for _ in 0..200 {
        if !server.requests().is_empty() && !processes_with(&marker).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        !processes_with(&marker).is_empty(),
        "the sleep never started"
    );
    let pressed = Instant::now();
    common::signal(&child, "INT");
    seen.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    let took = pressed.elapsed();
    assert_eq!(status.code(), Some(130));
    // Within the cancel grace (2 s), with room for a loaded machine.
    assert!(took < Duration::from_secs(10), "{took:?}");
    let evs = events(&seen.join("\n"));
    let finished = named(&evs, "agent.finished");
    assert_eq!(finished.len(), 2, "{finished:?}");
    assert!(
        finished
            .iter()
            .all(|f| f["payload"]["status"] == "cancelled"),
        "{finished:?}"
    );
    let end = named(&evs, "turn.end")
        .into_iter()
        .find(|e| e["payload"].get("agent").is_none())
        .unwrap();
    assert_eq!(end["payload"]["status"], "cancelled");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_with(&marker), Vec::<String>::new(), "orphan left");
}

/// A child does not inherit its parent's approvals: the person approved
/// `touch shared` for the parent's session, and the child's identical call
/// is asked again, the question labelled with the agent's path. The
/// console shows the child's calls under its path.
#[test]
fn a_childs_approvals_are_asked_again_and_labelled() {
    let env = StudEnv::new();
    script(
        &env,
        json!([
            {"text": "", "tool_calls": [tool("p1", "bash", json!({"command": "touch shared"}))]},
            {"text": "", "tool_calls": [tool("p2", "bash", json!({"command": "touch shared"}))]},
            {"text": "", "tool_calls": [task("t", "general", "touch it too")]},
            {"text": "parent got: {{tool_results}}"}
        ]),
        &[(
            "sub-agent of a coding assistant",
            json!([
                {"text": "", "tool_calls": [tool("g1", "bash", json!({"command": "touch shared"}))]},
                {"text": "child done"}
            ]),
        )],
        json!({}),
    );
    // Not headless: the console asks on the terminal and reads stdin.
    let out = env.run(&["run", "go"], "y\ny\n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let all = format!("{stdout}{stderr}");
    let prompts: Vec<&str> = all.lines().filter(|l| l.contains("Allow bash")).collect();
    // Once for the parent (its second call is remembered), once for the child.
    assert_eq!(prompts.len(), 2, "{all}");
    assert!(!prompts[0].contains("[agent"), "{}", prompts[0]);
    assert!(
        prompts[1].contains("[agent main/general] Allow bash `touch shared`"),
        "{}",
        prompts[1]
    );
    assert!(all.contains("[agent main/general] general job"), "{all}");
    assert!(all.contains("[main/general] > bash("), "{all}");
    let answer = &all[all.find("parent got:").expect("the parent answered")..];
    assert!(answer.contains("child done"), "{all}");
}

/// An agent with a `stateMachine` runs its task as that workflow: the
/// stage's envelope decides its calls, and the workflow's events carry
/// the child's path.
#[test]
fn an_agent_with_a_state_machine_runs_its_task_as_a_workflow() {
    let env = StudEnv::new();
    env.install("workflow");
    agent(
        &env,
        "staged",
        "tools: [read, write]\nstateMachine: workflow\n",
    );
    env.file(
        "script.json",
        &json!({
            "turns": [
                {"text": "", "tool_calls": [task("t", "staged", "write the file")]},
                {"text": "parent got: {{tool_results}}"}
            ],
            "lanes": {"STAGE-a": {"turns": [
                {"text": "", "tool_calls": [tool("w", "write", json!({"path": "staged.txt", "content": "by the stage"}))]},
                {"text": "", "tool_calls": [tool("d", "done", json!({}))]}
            ]}}
        })
        .to_string(),
    );
    env.scripted_settings(json!({"stateMachines": {"workflow": {
        "entry": "a",
        "stages": [{"id": "a", "allowedTools": ["write"], "turnCap": 3}]
    }}}));
    // Headless ask: the stage's envelope approves `write` (a user-level
    // agent chose that machine).
    let (out, evs, res) = run(&env, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(res["status"], "ok", "{res}");
    assert_eq!(env.read("staged.txt"), "by the stage");
    let attached = named(&evs, "workflow.attached");
    assert_eq!(attached.len(), 1);
    assert_eq!(attached[0]["payload"]["agent"], "main/staged");
    let finished = named(&evs, "agent.finished");
    assert_eq!(finished[0]["payload"]["status"], "ok", "{finished:?}");
}

/// A definition may make its child stricter than the parent, never
/// looser: `mode: ask` under a yolo parent asks (headless: exit 3), and
/// `mode: yolo` under an ask parent still asks. (`--mode yolo`, not
/// `--yolo`: headless, `--yolo` also answers every question yes.)
#[test]
fn a_definition_can_tighten_the_mode_but_never_loosen_it() {
    for (front, flags) in [
        ("mode: ask\n", vec!["--mode", "yolo"]),
        ("mode: yolo\n", vec![]),
    ] {
        let env = StudEnv::new();
        agent(&env, "worker", front);
        script(
            &env,
            json!([
                {"text": "", "tool_calls": [task("t", "worker", "make a file")]},
                {"text": "never"}
            ]),
            &[(
                "worker",
                json!([
                    {"text": "", "tool_calls": [tool("w", "bash", json!({"command": "touch ran"}))]},
                    {"text": "done"}
                ]),
            )],
            json!({}),
        );
        let (out, evs, _) = run(&env, &flags);
        assert_eq!(out.status.code(), Some(3), "{front}");
        assert!(!env.project.path().join("ran").exists(), "{front}");
        let started = named(&evs, "agent.started");
        assert_eq!(started[0]["payload"]["mode"], "ask", "{front}");
    }
}

/// A child's cost share is a budget of its own: reaching it stops the
/// child with a typed error before its next request, and the parent goes
/// on with that error as the call's result.
#[test]
fn a_child_that_spends_its_budget_stops_with_a_typed_error() {
    let env = StudEnv::new();
    // One dollar per million tokens: the child's first request costs far
    // more than its cap.
    agent(&env, "spender", "maxCostUsd: 0.000001\n");
    script(
        &env,
        json!([
            {"text": "", "tool_calls": [task("t", "spender", "spend")]},
            {"text": "parent got: {{tool_results}}"}
        ]),
        &[(
            "spender",
            json!([
                {"text": "", "tool_calls": [tool("r", "read", json!({"path": "nothing.txt"}))]},
                {"text": "never reached"}
            ]),
        )],
        json!({"pricing": {"scripted": {"input": 1.0, "output": 1.0}}}),
    );
    let (out, evs, res) = run(&env, &["--yolo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(res["status"], "ok");
    let failed = named(&evs, "tool.failed")
        .into_iter()
        .find(|e| e["payload"]["tool"] == "task")
        .expect("the task call failed");
    assert_eq!(failed["payload"]["code"], "agent-budget-exhausted");
    let exceeded = named(&evs, "budget.exceeded");
    assert_eq!(exceeded.len(), 1);
    assert_eq!(exceeded[0]["payload"]["agent"], "main/spender");
    let finished = named(&evs, "agent.finished");
    assert_eq!(finished[0]["payload"]["iterations"], 1);
}

/// A `task` call made in a workflow stage: the child gets only the tools
/// of that stage's envelope (and its definition's).
#[test]
fn a_child_started_in_a_stage_gets_only_the_stage_tools() {
    let env = StudEnv::new();
    env.install("workflow");
    env.file(
        "script.json",
        &json!({
            "turns": [{"text": "no lane matched"}],
            "lanes": {
                "STAGE-a": {"turns": [
                    {"text": "", "tool_calls": [task("t", "general", "look")]},
                    {"text": "", "tool_calls": [tool("d", "done", json!({}))]}
                ]},
                "sub-agent of a coding assistant": {"turns": [{"text": "child ok"}]}
            }
        })
        .to_string(),
    );
    env.scripted_settings(json!({"stateMachines": {"workflow": {
        "entry": "a",
        "stages": [{"id": "a", "allowedTools": ["task", "read"], "turnCap": 3}]
    }}}));
    let (out, evs, _) = run(&env, &["--sm", "workflow"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started = named(&evs, "agent.started");
    assert_eq!(started.len(), 1, "{evs:?}");
    assert_eq!(started[0]["payload"]["tools"], json!(["read"]));
    assert_eq!(named(&evs, "agent.finished")[0]["payload"]["status"], "ok");
}

/// `stud agents list` shows the agents of every scope with where each is
/// defined, and names a file that was left out (exit 1).
#[test]
fn agents_list_shows_every_scope_and_names_a_bad_file() {
    let env = StudEnv::new();
    agent(&env, "alpha", "tools: [read]\n");
    std::fs::write(env.home.path().join("agents/broken.md"), "no front matter").unwrap();
    let dir = env.project.path().join(".stud/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("local.md"),
        "---\nname: local\ndescription: the project's own\n---\nYou help here.\n",
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let out = env.command(&["agents", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("general  (bundled)"), "{stdout}");
    assert!(stdout.contains("alpha  ("), "{stdout}");
    assert!(stdout.contains("tools: read;"), "{stdout}");
    assert!(
        stdout.contains("local  (") && stdout.contains(".stud/agents/local.md"),
        "{stdout}"
    );
    assert!(
        stderr.contains("broken.md") && stderr.contains("front matter"),
        "{stderr}"
    );
}

/// A child's changes belong to its parent's turn: the parent's snapshot
/// is taken before the `task` call, the turn's checkpoint names the
/// child's file, and rewinding the parent's turn takes it back. The child
/// keeps no checkpoints of its own.
#[test]
fn a_childs_changes_belong_to_its_parents_turn() {
    let env = StudEnv::new();
    env.file("before.txt", "the parent's\n");
    agent(&env, "worker", "tools: bash\n");
    let (evs, res) = delegate_once(
        &env,
        "worker",
        tool(
            "b",
            "bash",
            json!({"command": "echo child > child.txt && rm before.txt"}),
        ),
    );
    assert!(
        res["result"]
            .as_str()
            .unwrap_or_default()
            .contains("parent got"),
        "{res}"
    );
    let recorded: Vec<&Value> = evs
        .iter()
        .filter(|e| e["event"] == "checkpoint.recorded")
        .collect();
    let names: Vec<&Value> = evs.iter().map(|e| &e["event"]).collect();
    assert_eq!(recorded.len(), 1, "{names:?}");
    let id = res["session_id"].as_str().expect("id");
    assert_eq!(recorded[0]["payload"]["turn_id"], format!("{id}-t1"));
    assert_eq!(
        recorded[0]["payload"]["changed"],
        json!(["before.txt", "child.txt"])
    );
    let journals = std::fs::read_dir(
        stud::kernel::checkpoints::project_dir(env.home.path(), env.project.path())
            .join("sessions"),
    )
    .expect("journals")
    .count();
    assert_eq!(journals, 1, "only the parent keeps a journal");
    env.ok(&["session", "rewind", id, "1", "--files", "--yes"]);
    assert!(!env.project.path().join("child.txt").exists());
    assert_eq!(env.read("before.txt"), "the parent's\n");
}
