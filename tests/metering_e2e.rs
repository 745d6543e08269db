//! Per-extension metering, checked against a fixture that burns a known
//! amount of CPU and memory (`tests/fixtures/burner`): the figures in
//! `stud session show --stats`, the `extension.metered` events, the
//! `cpu-ms-per-turn` budget, and `deactivate`/`dispose` at the session's
//! end, seen from inside the extension.

use crate::common;

use common::{StudEnv, call};
use serde_json::{Value, json};

const MIB: u64 = 1024 * 1024;

/// The CPU time the finished children of this process used (user and
/// system), in ms: an upper bound for what stud can have measured.
fn children_cpu_ms() -> f64 {
    // SAFETY: `usage` is a valid, writable rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

fn session_id(env: &StudEnv) -> String {
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    list[0]["session_id"]
        .as_str()
        .expect("a session")
        .to_string()
}

fn stats(env: &StudEnv) -> Vec<Value> {
    let id = session_id(env);
    let shown = env.ok(&["session", "show", &id, "--stats", "--json"]);
    serde_json::from_str::<Value>(&shown)
        .expect("json")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn row<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row for {id} in {rows:#?}"))
}

/// One headless session whose model has the burner do `work` million
/// steps holding `alloc_mib` MiB, then sleep `sleep_ms`: the burner's row
/// of `session show --stats`, and the run's stdout (stream-json).
fn burn(work: u64, alloc_mib: u64, sleep_ms: u64) -> (StudEnv, Value, String) {
    let env = StudEnv::new();
    env.install("burner");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("burn", json!({"work": work, "alloc_mib": alloc_mib}))]},
            {"text": "", "tool_calls": [call("burn", json!({"work": 0, "alloc_mib": 0, "sleep_ms": sleep_ms}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    let out = env.run(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "burn",
        ],
        "",
    );
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = stats(&env);
    let burner = row(&rows, "burner").clone();
    (env, burner, said)
}

/// CPU time measures work, not wall time: four times the steps cost
/// about four times the CPU however busy the machine is, a sleep costs
/// none (it is time in the host), and stud never reports more CPU than
/// its process used.
#[test]
fn metering_matches_what_the_extension_burned() {
    let before = children_cpu_ms();
    let (_, small, _) = burn(100, 0, 0);
    let (env, large, said) = burn(400, 40, 400);
    let process_cpu = children_cpu_ms() - before;

    let cpu = |r: &Value| r["cpu_ms"].as_f64().unwrap();
    let ratio = cpu(&large) / cpu(&small);
    assert!(
        (2.5..6.0).contains(&ratio),
        "400M steps cost {} ms, 100M cost {} ms: ratio {ratio}",
        cpu(&large),
        cpu(&small)
    );
    assert!(
        cpu(&large) + cpu(&small) <= process_cpu,
        "more CPU than the processes used: {} + {} > {process_cpu}",
        cpu(&large),
        cpu(&small)
    );
    // The 400 ms sleep is a wait in the host, not CPU.
    let host = large["host_ms"].as_f64().unwrap();
    assert!(host >= 350.0, "host {host} ms: {large:#}");
    assert!(cpu(&large) < cpu(&small) * 6.0, "the sleep counted as CPU");
    // 40 MiB held, under the 256 MiB limit; the small run held ~none.
    let peak = large["peak_memory_bytes"].as_u64().unwrap();
    assert!((40 * MIB..256 * MIB).contains(&peak), "peak {peak}");
    assert!(small["peak_memory_bytes"].as_u64().unwrap() < 40 * MIB);
    assert!(large["calls"].as_u64().unwrap() >= 2, "{large:#}");

    // The turn's event says the same for the turn.
    let metered: Vec<Value> = said
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "extension.metered")
        .collect();
    let p = &metered
        .iter()
        .find(|e| e["payload"]["id"] == "burner")
        .unwrap_or_else(|| panic!("no extension.metered for burner: {metered:#?}"))["payload"];
    assert_eq!(p["cpu_ms"], large["cpu_ms"], "{p:#}");
    assert_eq!(p["peak_memory_bytes"], large["peak_memory_bytes"]);

    // The readable table names it.
    let id = session_id(&env);
    let table = env.ok(&["session", "show", &id, "--stats"]);
    assert!(
        table.contains("burner") && table.contains("peak MiB"),
        "{table}"
    );

    // The session's end retired it from inside: deactivate, then dispose.
    let log = env.read("lifecycle.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].starts_with("deactivate after 2 calls"), "{log}");
    assert_eq!(lines[1], "dispose");
}

/// `cpu-ms-per-turn`: once an extension used its CPU for the turn, its
/// next call in that turn is refused with a typed error; the next turn
/// starts again.
#[test]
fn the_cpu_budget_refuses_calls_until_the_next_turn() {
    let env = StudEnv::new();
    let dir = env.install("burner");
    let manifest = dir.join("extension.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("[limits]\n", "[limits]\ncpu-ms-per-turn = 50\n"),
    )
    .unwrap();
    // 300M steps: well over 50 ms of CPU anywhere.
    let burn = || call("burn", json!({"work": 300, "alloc_mib": 0}));
    env.script(
        json!([
            {"text": "", "tool_calls": [burn()]},
            {"text": "", "tool_calls": [burn()]},
            {"text": "first: {{tool_results}}"},
            {"text": "", "tool_calls": [burn()]},
            {"text": "second: {{tool_results}}"}
        ]),
        json!({}),
    );
    // Two turns at the line console: the budget holds within the first
    // and starts again in the second.
    let out = env.on_terminal("--yolo", "burn twice\nagain\n");
    let said = String::from_utf8_lossy(&out.stdout);
    let first = said.find("first:").unwrap_or_else(|| panic!("{said}"));
    let second = said.find("second:").unwrap_or_else(|| panic!("{said}"));
    assert!(
        said[first..second].contains("over its budget of 50 ms"),
        "{said}"
    );
    assert!(said[first..second].contains("cpu-ms-per-turn"), "{said}");
    assert!(
        said[second..].contains("second: burned 300M steps"),
        "{said}"
    );
}

/// `tokens-per-session`: a provider that spent its tokens gets no further
/// request in the session, resumed or not; the error says which budget.
#[test]
fn a_providers_token_budget_stops_the_session() {
    let env = StudEnv::new();
    let dir = env.home.path().join("extensions").join("thrifty");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/scripted/extension.toml"),
    )
    .unwrap()
    .replace("id = \"scripted\"", "id = \"thrifty\"");
    std::fs::write(
        dir.join("extension.toml"),
        format!("{manifest}\n[limits]\ntokens-per-session = 2\n"),
    )
    .unwrap();
    std::fs::copy(
        common::bundled_wasm("stud_scripted.wasm"),
        dir.join("stud_scripted.wasm"),
    )
    .unwrap();
    env.file(
        "script.json",
        &json!({"turns": [{"text": "one"}, {"text": "two"}]}).to_string(),
    );
    env.settings(json!({
        "active": {"provider": "thrifty"},
        "providers": {"thrifty": {"script-file": "script.json"}}
    }));
    let out = env.run(&["run", "-p", "first"], "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("one"), "{said}");
    let rows = stats(&env);
    let tokens = row(&rows, "thrifty")["tokens"].as_u64().unwrap();
    assert!(tokens >= 2, "{rows:#?}");
    // Resumed in another process: the budget counts what was spent.
    let out = env.run(&["run", "-p", "-c", "second"], "");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("provider `thrifty` has spent") && said.contains("tokens-per-session"),
        "{said}"
    );
    assert!(!said.contains("two"), "{said}");
}

/// The person's budget in the settings (`budget.extensions.<id>`) limits an
/// extension whose manifest sets none, and a project may only lower it.
#[test]
fn a_settings_budget_limits_an_extension_its_manifest_does_not() {
    let env = StudEnv::new();
    env.install("burner");
    let burn = || call("burn", json!({"work": 300, "alloc_mib": 0}));
    env.script(
        json!([
            {"text": "", "tool_calls": [burn()]},
            {"text": "", "tool_calls": [burn()]},
            {"text": "first: {{tool_results}}"}
        ]),
        json!({"budget": {"extensions": {"burner": {"cpuMsPerTurn": 50}}}}),
    );
    let out = env.run(&["run", "-p", "--yolo", "burn twice"], "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("over its budget of 50 ms"), "{said}");
    assert!(
        said.contains("budget.extensions.burner.cpuMsPerTurn"),
        "{said}"
    );

    // A trusted project cannot raise it: its larger value is ignored.
    let stud = env.project.path().join(".stud");
    std::fs::create_dir_all(&stud).unwrap();
    std::fs::write(
        stud.join("settings.json"),
        json!({"budget": {"extensions": {"burner": {"cpuMsPerTurn": 100000}}}}).to_string(),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let out = env.run(&["run", "-p", "--yolo", "burn twice"], "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("over its budget of 50 ms"), "{said}");
}

/// A command component is loaded at its first use, after the session
/// started: it is metered from then on (its row in `--stats`) and retired
/// with the session (`deactivate`, then `dispose`, seen from inside it).
#[test]
fn a_command_loaded_at_first_use_is_metered_and_retired() {
    let env = StudEnv::new();
    env.install("tally");
    env.script(json!([{"text": "hello"}]), json!({}));
    let out = env.on_terminal("--yolo", "/tally\n/tally\nhi\n");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("tally 2"), "{said}");
    let log = std::fs::read_to_string(env.project.path().join("lifecycle.log"))
        .unwrap_or_else(|e| panic!("no lifecycle.log ({e}): {said}"));
    assert_eq!(log, "deactivate after 2 runs\ndispose\n");
    let rows = stats(&env);
    let tally = row(&rows, "tally");
    assert_eq!(tally["kind"], "command", "{tally:#}");
    // `describe` at load, then two runs.
    assert!(tally["calls"].as_u64().unwrap() >= 3, "{tally:#}");
}
