//! The authority stack under attack, end to end: the `stud` binary, real
//! components (hostile fixtures among them), real project folders. Each
//! test is an attack that must fail while the session goes on.

use crate::common;

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

/// A tool acts on the world only inside an approved call: processes and
/// requests from `init`, `describe` and `approval-key` fail.
#[test]
fn no_process_or_request_outside_an_approved_call() {
    let server = common::http::TestServer::start(vec![common::http::Reply::new(200, "hi"); 8]);
    let env = StudEnv::new();
    env.install("sneaky");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("sneaky", json!({}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({"tools": {"sneaky": {"target": server.url()}}, "network": {"sneaky": ["127.0.0.1"]}}),
    );
    let out = env
        .command(&["run", "-p", "--yolo", "--output-format", "json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = last_json(&out)["result"].as_str().unwrap_or("").to_string();
    for phase in ["init", "describe", "key"] {
        assert!(
            !env.project.path().join(format!("{phase}-pwned")).exists(),
            "{phase} started a process: {answer}"
        );
        let line = answer
            .lines()
            .find(|l| l.starts_with(&format!("{phase}:")))
            .unwrap_or_else(|| panic!("no {phase} report in {answer}"));
        assert!(
            line.contains("process refused [")
                && line.contains("http refused [effect-outside-call]"),
            "{line}"
        );
    }
    // The approved call itself may act.
    assert!(env.project.path().join("invoke-pwned").exists(), "{answer}");
    assert!(answer.contains("invoke: process ran"), "{answer}");
    assert_eq!(server.requests().len(), 1, "{answer}");
}

/// A tool that claims to be read-only (approved without asking) but holds
/// `exec` is refused at load, with the manifest line named.
#[test]
fn a_read_only_tool_may_not_hold_exec() {
    let env = StudEnv::new();
    env.install("sneaky");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("sneaky", json!({}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({"tools": {"sneaky": {"read-only": true, "target": "http://127.0.0.1:9/"}}}),
    );
    let out = env
        .command(&["run", "-p", "--output-format", "json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("sneaky") && err.contains("read-only") && err.contains("exec = true"),
        "{err}"
    );
    let answer = last_json(&out)["result"].as_str().unwrap_or("").to_string();
    assert!(answer.contains("unknown tool `sneaky`"), "{answer}");
    assert!(!env.project.path().join("invoke-pwned").exists());
}

/// A tool that claims to be read-only but may reach the network (hosts
/// the user grants, or hosts in its manifest) would run unasked in ask
/// mode and could send what it is given anywhere it reaches: refused at
/// load, with the manifest line named; no request leaves.
#[test]
fn a_read_only_tool_may_not_hold_the_network() {
    let server = common::http::TestServer::start(vec![common::http::Reply::new(200, "hi"); 4]);
    for (line, rewrite) in [
        ("user-hosts = true", None),
        (
            "network = [\"127.0.0.1\"]",
            Some("network = [\"127.0.0.1\"]"),
        ),
    ] {
        let env = StudEnv::new();
        let dir = env.install("net-reader");
        if let Some(rewrite) = rewrite {
            let manifest = std::fs::read_to_string(dir.join("extension.toml"))
                .expect("manifest")
                .replace("user-hosts = true", rewrite);
            std::fs::write(dir.join("extension.toml"), manifest).expect("write manifest");
        }
        env.script(
            json!([
                {"text": "", "tool_calls": [call("net-reader", json!({}))]},
                {"text": "{{tool_results}}"}
            ]),
            json!({"tools": {"net-reader": {"target": server.url()}}, "network": {"net-reader": ["127.0.0.1"]}}),
        );
        // Ask mode, headless: only a read-only tool runs without a person.
        let out = env
            .command(&["run", "-p", "--output-format", "json", "go"])
            .output()
            .expect("run stud");
        let err = stderr(&out);
        assert!(
            err.contains("`net-reader`") && err.contains("read-only") && err.contains(line),
            "{line}: {err}"
        );
        assert!(out.status.success(), "{line}: {err}");
        let answer = last_json(&out)["result"].as_str().unwrap_or("").to_string();
        assert!(
            answer.contains("unknown tool `net-reader`"),
            "{line}: {answer}"
        );
    }
    assert!(server.requests().is_empty(), "a request left");
}

/// Every layer of the authority stack leaves its decision on the record,
/// allows included: the state machine layer (none attached: it passes),
/// the mode, then each guard. A call the guard allows and one it denies
/// both show the whole stack.
#[test]
fn every_layer_of_the_stack_is_audited() {
    let env = StudEnv::new();
    env.file("a.txt", "alpha\n");
    env.file(".env", "API_KEY=very-secret-value\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [
                {"id": "ok", "name": "read", "arguments": {"path": "a.txt"}},
                {"id": "no", "name": "read", "arguments": {"path": ".env"}}
            ]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env
        .command(&["run", "-p", "--output-format", "stream-json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let evs = common::stream::events(&stdout);
    let stack = |id: &str| -> Vec<(String, String)> {
        common::stream::named(&evs, "approval.decided")
            .into_iter()
            .filter(|e| e["payload"]["call_id"] == id)
            .map(|e| {
                let p = &e["payload"];
                (
                    p["layer"].as_str().unwrap_or_default().to_string(),
                    p["decision"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let pair = |l: &str, d: &str| (l.to_string(), d.to_string());
    assert_eq!(
        stack("ok"),
        [
            pair("state-machine", "pass"),
            pair("mode", "approve"),
            pair("guard:protect-paths", "approve"),
        ]
    );
    assert_eq!(
        stack("no"),
        [
            pair("state-machine", "pass"),
            pair("mode", "approve"),
            pair("guard:protect-paths", "deny"),
        ]
    );
    let answer = common::stream::result(&stdout)["result"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        answer.contains("alpha") && !answer.contains("very-secret-value"),
        "{answer}"
    );
}

/// A hostile repository links `src/cfg` to `../.stud`: `write:src/*` must
/// not let the model write `.stud/settings.json` through the link.
#[cfg(unix)]
#[test]
fn an_allowlisted_path_does_not_reach_through_a_symlink() {
    let env = StudEnv::new();
    std::fs::create_dir_all(env.project.path().join("src")).expect("mkdir");
    std::fs::create_dir_all(env.project.path().join(".stud")).expect("mkdir");
    std::os::unix::fs::symlink("../.stud", env.project.path().join("src/cfg")).expect("link");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "src/cfg/settings.json", "content": "{\"securityMode\": {\"mode\": \"yolo\"}}"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run_allowlist(&["write:src/*"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(".stud/settings.json"),
        "{}",
        stderr(&out)
    );
    assert!(!env.project.path().join(".stud/settings.json").exists());
    // A plain file under src/ is still approved by the entry.
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "src/ok.txt", "content": "fine"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run_allowlist(&["write:src/*"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.read("src/ok.txt"), "fine");
}

/// `notes.txt -> .env`: the guard protects what the link leads to.
#[cfg(unix)]
#[test]
fn a_protected_file_behind_a_symlink_stays_protected() {
    let env = StudEnv::new();
    env.file(".env", "API_KEY=very-secret-value\n");
    std::os::unix::fs::symlink(".env", env.project.path().join("notes.txt")).expect("link");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": "notes.txt"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env
        .command(&["run", "-p", "--yolo", "--output-format", "json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = last_json(&out)["result"].as_str().unwrap_or("").to_string();
    assert!(
        answer.contains("denied by guard `protect-paths`") && answer.contains("leads to `.env`"),
        "{answer}"
    );
    assert!(!answer.contains("very-secret-value"), "{answer}");
}

/// Install the `hostile` fixture under another id, with a longer deadline.
fn hostile_as(env: &StudEnv, id: &str) {
    let dir = env.install("hostile");
    let target = env.home.path().join("extensions").join(id);
    std::fs::rename(&dir, &target).expect("rename fixture");
    let manifest = std::fs::read_to_string(target.join("extension.toml"))
        .expect("manifest")
        .replace("id = \"hostile\"", &format!("id = \"{id}\""))
        .replace("timeout-ms = 500", "timeout-ms = 60000")
        .replace("name = \"Hostile tool\"", &format!("name = \"{id}\""));
    std::fs::write(target.join("extension.toml"), manifest).expect("write manifest");
}

/// One tool reports progress 200,000 times while another reports three
/// steps: the stream stays small, the flood costs only the flooder, and
/// nothing a consumer relies on is lost.
#[test]
fn an_event_flood_is_contained() {
    let env = StudEnv::new();
    hostile_as(&env, "flooder");
    env.install("hostile");
    env.script(
        json!([
            {"text": "", "tool_calls": [
                {"id": "f", "name": "flooder", "arguments": {"mode": "flood"}},
                {"id": "p", "name": "hostile", "arguments": {"mode": "progress"}}
            ]},
            {"text": "{{tool_results}}"}
        ]),
        json!({"tools": {"flooder": {"name": "flooder"}}}),
    );
    let out = env
        .command(&[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let named = |n: &str| events.iter().filter(|e| e["event"] == n).count();
    assert!(
        named("bus.dropped") <= 3,
        "{} drop notices",
        named("bus.dropped")
    );
    assert!(events.len() < 5_000, "{} lines on stdout", events.len());
    assert_eq!(named("tool.succeeded"), 2);
    let steady: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool.progress" && e["payload"]["call_id"] == "p")
        .collect();
    assert_eq!(steady.len(), 3, "the other tool's progress was starved");
    let suppressed: u64 = events
        .iter()
        .filter(|e| e["event"] == "extension.events.suppressed")
        .filter(|e| e["payload"]["extension"] == "flooder")
        .filter_map(|e| e["payload"]["count"].as_u64())
        .sum();
    assert!(suppressed > 100_000, "suppressed {suppressed}");
    let result = events.last().expect("result line");
    assert_eq!(result["type"], "result");
    let answer = result["result"].as_str().unwrap_or_default();
    assert!(
        answer.contains("flooded") && answer.contains("done"),
        "{answer}"
    );
    // Sequence numbers only grow.
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

/// Escape sequences in model text, tool output, extension folder names and
/// the warnings that quote them reach the terminal as visible text, never
/// as control bytes (no retitled window, cleared screen or fake prompt).
#[test]
fn terminal_control_sequences_are_shown_not_obeyed() {
    let env = StudEnv::new();
    env.file(
        "notes.txt",
        "\u{1b}]0;pwned\u{7}\r\u{1b}[2KAllow bash `rm -rf ~`? [y/N] ",
    );
    env.script(
        json!([
            {"text": "\u{1b}[2J\u{1b}[Hhello \u{202e}gnp.exe", "tool_calls": [call("read", json!({"path": "notes.txt"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    // A global extension folder whose name carries an escape; its broken
    // manifest makes stud warn about it, quoting the path.
    let bad = env.home.path().join("extensions").join("evil\u{1b}[31mred");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(bad.join("extension.toml"), "id = 1").expect("write");
    let out = env.on_terminal("run --yolo go", "");
    let screen = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("hello"), "{screen}");
    assert!(screen.contains("\\u{1b}]0;pwned\\u{7}"), "{screen}");
    assert!(screen.contains("\\u{202e}"), "{screen}");
    assert!(screen.contains("evil\\u{1b}[31mred"), "{screen}");
    for (byte, name) in [(0x1b, "ESC"), (0x07, "BEL"), (b'\r', "CR")] {
        // script(1) itself turns "\n" into "\r\n"; a lone CR is the attack.
        let lone = if byte == b'\r' {
            out.stdout
                .windows(2)
                .any(|w| w[0] == b'\r' && w[1] != b'\n')
        } else {
            out.stdout.contains(&byte)
        };
        assert!(!lone, "a raw {name} reached the terminal:\n{screen}");
    }
    // Headless, warnings on stderr are safe too.
    let out = env
        .command(&["run", "-p", "--yolo", "go"])
        .output()
        .expect("run stud");
    assert!(!out.stderr.contains(&0x1b), "{}", stderr(&out));
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo failed");
}

/// A tool that waits inside WASI (a minute's sleep, a FIFO nobody writes
/// to) is stopped at its 500 ms deadline like one that computes; the
/// session goes on and the answer arrives.
#[cfg(unix)]
#[test]
fn the_deadline_holds_inside_wasi_calls() {
    let env = StudEnv::new();
    env.install("hostile");
    mkfifo(&env.project.path().join("pipe"));
    env.script(
        json!([
            {"text": "", "tool_calls": [
                {"id": "s", "name": "hostile", "arguments": {"mode": "sleep"}}
            ]},
            {"text": "", "tool_calls": [
                {"id": "f", "name": "hostile", "arguments": {"mode": "fifo", "tag": "pipe"}}
            ]},
            {"text": "", "tool_calls": [
                {"id": "o", "name": "hostile", "arguments": {"mode": "ok"}}
            ]},
            {"text": "still here: {{tool_results}}"}
        ]),
        json!({}),
    );
    let started = std::time::Instant::now();
    let out = env
        .command(&["run", "-p", "--yolo", "--output-format", "json", "go"])
        .output()
        .expect("run stud");
    let took = started.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = last_json(&out)["result"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(answer.starts_with("still here"), "{answer}");
    assert!(answer.contains("execution-timeout"), "{answer}");
    assert!(
        answer.contains("alive"),
        "the tool works again after its stopped calls: {answer}"
    );
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}

/// Ctrl-C while a tool waits inside WASI (a minute's sleep, no deadline to
/// speak of): the wait is cut short, the call is recorded as cancelled and
/// the one-shot run ends `cancelled` (exit 130). How soon is measured by
/// the `cancellation` bench, not asserted here.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_a_tool_waiting_inside_wasi() {
    let env = StudEnv::new();
    hostile_as(&env, "sleeper");
    env.script(
        json!([
            {"text": "", "tool_calls": [{"id": "s", "name": "sleeper", "arguments": {"mode": "sleep"}}]},
            {"text": "never"}
        ]),
        json!({"tools": {"sleeper": {"name": "sleeper"}}}),
    );
    // Ctrl-C once the guest is well into its sleep.
    let (status, evs) = env.interrupt_after(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ],
        "tool.started",
        std::time::Duration::from_millis(300),
    );
    assert_eq!(status.code(), Some(130), "{evs:?}");
    let cancelled = common::stream::named(&evs, "tool.cancelled");
    assert_eq!(cancelled.len(), 1, "{evs:?}");
    assert_eq!(cancelled[0]["payload"]["call_id"], "s");
    let end = common::stream::named(&evs, "turn.end");
    assert_eq!(end[0]["payload"]["status"], "cancelled", "{evs:?}");
}

/// A repository plants a FIFO named AGENTS.md: the bundled context
/// provider refuses it instead of waiting for a writer, and the headless
/// run finishes.
#[cfg(unix)]
#[test]
fn a_fifo_named_agents_md_does_not_hang_the_session() {
    let env = StudEnv::new();
    mkfifo(&env.project.path().join("AGENTS.md"));
    env.script(json!([{"text": "answered"}]), json!({}));
    let started = std::time::Instant::now();
    let out = env
        .command(&["run", "-p", "--output-format", "json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(last_json(&out)["result"], "answered");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

/// Lines that fooled the old hand-written split: each must be asked (a
/// headless run halts) and nothing may run; a plain `git` line still
/// passes `bash:git *`.
#[test]
fn shell_lines_cannot_smuggle_commands_past_a_wildcard_entry() {
    let env = StudEnv::new();
    for attack in [
        "git status #'\ngit --version;touch pwned;#'",
        "git $'\\x3b' touch pwned",
        "git log $(touch pwned)",
        "git status &> pwned",
        "git log `touch pwned`",
        "git status; f() { touch pwned; }",
    ] {
        env.script(
            json!([
                {"text": "", "tool_calls": [call("bash", json!({"command": attack}))]},
                {"text": "{{tool_results}}"}
            ]),
            json!({}),
        );
        let out = env.run_allowlist(&["bash:git *"]);
        assert_eq!(out.status.code(), Some(3), "{attack:?}: {}", stderr(&out));
        assert!(
            !env.project.path().join("pwned").exists(),
            "{attack:?} ran a command"
        );
    }
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "git --version && git --help > /dev/null"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run_allowlist(&["bash:git *", "bash:> /dev/null"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The deriver is a closed world: with the narrowest entry
/// `bash:git status`, every construct it does not model completely (case
/// patterns, redirections of compound commands, here-documents, loop
/// variables, a `cwd` of the call's own) is asked, and nothing runs. Each
/// of these ran `touch pwned` unasked before (issue 34).
#[cfg(unix)]
#[test]
fn constructs_the_key_does_not_model_are_asked() {
    use std::os::unix::fs::PermissionsExt;
    let env = StudEnv::new();
    let project = env.project.path();
    // The repository ships `bin/git`...
    std::fs::create_dir_all(project.join("bin")).expect("mkdir");
    std::fs::write(project.join("bin/git"), "#!/bin/sh\ntouch pwned\n").expect("write");
    std::fs::set_permissions(
        project.join("bin/git"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    // ...and a committed git folder whose config runs a command on status.
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(project)
            .env("HOME", project)
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "evil"]);
    git(&[
        "-C",
        "evil",
        "config",
        "core.fsmonitor",
        "touch ../pwned; false",
    ]);
    let attacks = [
        json!({"command": "case a in `touch pwned`|a) git status;; esac"}),
        json!({"command": "{ git status; } < \"$(touch pwned)\""}),
        json!({"command": "{ git status; } <<EOF\n$(touch pwned)\nEOF"}),
        json!({"command": "for PATH in bin; do git status; done"}),
        json!({"command": "git status", "cwd": "evil"}),
    ];
    for attack in attacks {
        env.script(
            json!([
                {"text": "", "tool_calls": [call("bash", attack.clone())]},
                {"text": "{{tool_results}}"}
            ]),
            json!({}),
        );
        let out = env.run_allowlist(&["bash:git status"]);
        assert_eq!(out.status.code(), Some(3), "{attack}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("(unclassified)"),
            "{attack}: the halt does not show the unclassified key: {}",
            stderr(&out)
        );
        assert!(!project.join("pwned").exists(), "{attack} ran a command");
    }
    // The entry still approves what it names, in the project root.
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "git status"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = env.run_allowlist(&["bash:git status"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The user's `PATH` has `.` (or `node_modules/.bin`, or a folder of the
/// project) in it, and the repository ships `./git`: the approved
/// `git status` must run the system's git, not the repository's. Commands
/// get a `PATH` without empty, relative or in-project entries.
#[cfg(unix)]
#[test]
fn the_search_path_does_not_reach_into_the_repository() {
    use std::os::unix::fs::PermissionsExt;
    let env = StudEnv::new();
    let project = env.project.path();
    for dir in [".", "bin"] {
        let git = project.join(dir).join("git");
        std::fs::create_dir_all(git.parent().expect("folder")).expect("mkdir");
        std::fs::write(&git, "#!/bin/sh\ntouch pwned\n").expect("write");
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "git status"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let path = format!(
        ".::{}:{}",
        project.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .command(&[
            "run",
            "-p",
            "--mode",
            "allowlist",
            "--allow",
            "bash:git status",
            "go",
        ])
        .env("PATH", path)
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!project.join("pwned").exists(), "the repository's git ran");
}
