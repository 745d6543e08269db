//! Sessions end to end with the `stud` binary and the bundled
//! `filesystem` store: resume with `--continue`, SIGKILL mid-turn, store
//! mismatch, secrets kept out of session files.

use crate::common;
use common::stream::events;

use std::path::Path;

use common::{StudEnv, call};
use serde_json::{Value, json};

/// A project whose scripted provider plays these turns.
struct Env(StudEnv);

impl std::ops::Deref for Env {
    type Target = StudEnv;
    fn deref(&self) -> &StudEnv {
        &self.0
    }
}

impl Env {
    fn new(turns: Value, settings: Value) -> Self {
        let env = StudEnv::new();
        env.script(turns, settings);
        Env(env)
    }

    fn sessions_dir(&self) -> std::path::PathBuf {
        self.home.path().join("data").join("filesystem")
    }

    fn only_session(&self) -> String {
        let ids: Vec<String> = std::fs::read_dir(self.sessions_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        ids[0].clone()
    }
}

fn event<'a>(evs: &'a [Value], name: &str) -> &'a Value {
    evs.iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name} event"))
}

/// A run that only looked around (a command, no message) is not saved:
/// `-c` continues the last real conversation, and `session list` does not
/// fill up with empty sessions.
#[test]
fn a_run_without_a_message_is_not_saved_and_continue_skips_it() {
    let env = Env::new(
        json!([{"text": "one"}, {"text": "two: {{last_user}}"}]),
        json!({}),
    );
    assert_eq!(env.ok(&["run", "-p", "first"]).trim(), "one");
    let id = env.only_session();
    env.ok(&["run", "-p", "/help"]);
    env.ok(&["run", "-p", "/cost"]);
    assert_eq!(
        env.only_session(),
        id,
        "a session without a message was saved"
    );
    let listed = env.ok(&["session", "list"]);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert_eq!(env.ok(&["run", "-p", "-c", "second"]).trim(), "two: second");
    assert_eq!(env.only_session(), id);
}

/// A manifest whose field has the wrong type is refused by name, and the
/// session's files are left as they were.
#[test]
fn a_manifest_with_a_wrong_field_is_refused_naming_it() {
    let env = Env::new(json!([{"text": "one"}, {"text": "two"}]), json!({}));
    env.ok(&["run", "-p", "first"]);
    let id = env.only_session();
    let path = env.sessions_dir().join(&id).join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["turns"] = json!("one");
    std::fs::write(&path, manifest.to_string()).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    let out = env.run(&["run", "-p", "-c", "second"], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("session `{id}` cannot be resumed")) && err.contains("field `turns`"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn continue_resumes_the_full_history_and_keeps_the_mode() {
    let env = Env::new(
        json!([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}]),
        json!({"securityMode": {"mode": "allowlist", "allowlist": ["read"]}}),
    );
    assert_eq!(env.ok(&["run", "-p", "first"]).trim(), "one");
    assert_eq!(env.ok(&["run", "-p", "-c", "second"]).trim(), "two");
    assert_eq!(env.ok(&["run", "-p", "-c", "third"]).trim(), "three");
    let id = env.only_session();
    // Settings now say yolo; the resumed session keeps allowlist.
    env.scripted_settings(json!({"securityMode": {"mode": "yolo"}}));
    let out = env.ok(&[
        "run",
        "-p",
        "-c",
        "--output-format",
        "stream-json",
        "fourth",
    ]);
    let evs = events(&out);
    let resumed = event(&evs, "session.resumed");
    assert_eq!(resumed["payload"]["session_id"], id.as_str());
    assert_eq!(resumed["payload"]["messages"], 6);
    assert_eq!(resumed["payload"]["mode"], "allowlist");
    assert_eq!(event(&evs, "session.start")["payload"]["mode"], "allowlist");
    // One session, one id: the start event, the resume and the result.
    assert_eq!(
        event(&evs, "session.start")["payload"]["session_id"],
        id.as_str()
    );
    let result: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(result["session_id"], id.as_str());
    let shown = env.ok(&["session", "show", "--json", &id]);
    for text in [
        "first", "one", "second", "two", "third", "three", "fourth", "four",
    ] {
        assert!(
            shown.contains(&format!("\"{text}\"")),
            "{text} missing: {shown}"
        );
    }
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(env.sessions_dir().join(&id).join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["turns"], 4);
    assert_eq!(manifest["security_mode"], "allowlist");
    assert_eq!(manifest["store"], "filesystem");
    // Keys are sorted so the file diffs cleanly.
    let keys: Vec<&String> = manifest.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(env.ok(&["session", "list"]).contains(&id));
    env.ok(&["session", "delete", &id]);
    assert!(!env.sessions_dir().join(&id).exists());
}

#[test]
fn sigkill_mid_turn_loses_no_persisted_message_and_leaves_no_orphan_call() {
    let env = Env::new(
        json!([
            {"text": "working", "tool_calls": [call("bash", json!({"command": "sleep 30"}))]},
            {"text": "after resume: {{last_user}}"}
        ]),
        json!({}),
    );
    let (mut child, seen, _rest) = env.start_until(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "start",
        ],
        "tool.started",
    );
    let persisted: Vec<u64> = seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|ev| ev["event"] == "message.persisted")
        .map(|ev| ev["payload"]["index"].as_u64().unwrap())
        .collect();
    common::signal(&child, "KILL");
    let _ = child.wait();
    assert_eq!(
        persisted,
        [0, 1],
        "user and assistant messages confirmed before the kill"
    );
    // A write torn by the kill, ending inside a UTF-8 character (it was
    // never confirmed): it must cost that line only.
    let id = env.only_session();
    let log = env.sessions_dir().join(&id).join("log.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"role\":\"assistant\",\"content\":[{\"text\":\"h\xc3");
    std::fs::write(&log, bytes).unwrap();
    // The provider's place in its script was not saved either (that
    // happens at the end of a turn): it starts its script again.
    env.script(json!([{"text": "after resume: {{last_user}}"}]), json!({}));

    let out = env.ok(&[
        "run",
        "-p",
        "-c",
        "--yolo",
        "--output-format",
        "stream-json",
        "again",
    ]);
    let evs = events(&out);
    let resumed = event(&evs, "session.resumed");
    assert_eq!(resumed["payload"]["messages"], 3, "{resumed}");
    assert_eq!(resumed["payload"]["repaired_tool_calls"], 1);
    let shown = env.ok(&["session", "show", "--json", &id]);
    // Every message, once, in order, the orphan call answered.
    let mut at = 0;
    for part in [
        "\"start\"",
        "\"working\"",
        "interrupted",
        "\"again\"",
        "after resume: again",
    ] {
        let found = shown[at..]
            .find(part)
            .unwrap_or_else(|| panic!("{part} missing after byte {at}: {shown}"));
        at += found + part.len();
    }
    assert_eq!(shown.matches("\"working\"").count(), 1, "{shown}");
}

/// The bundled `filesystem` store's component under the id `id`, in
/// `<extensions>/<id>/` (so with a data folder of its own).
fn store_copy(extensions: &Path, id: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/filesystem-store");
    let dest = extensions.join(id);
    std::fs::create_dir_all(&dest).unwrap();
    let manifest = std::fs::read_to_string(src.join("extension.toml"))
        .unwrap()
        .replace("id = \"filesystem\"", &format!("id = \"{id}\""));
    std::fs::write(dest.join("extension.toml"), manifest).unwrap();
    std::fs::copy(
        common::bundled_wasm("stud_filesystem_store.wasm"),
        dest.join("stud_filesystem_store.wasm"),
    )
    .unwrap();
}

#[test]
fn resuming_with_another_store_is_a_mismatch() {
    let env = Env::new(json!([{"text": "one"}, {"text": "two"}]), json!({}));
    env.ok(&["run", "-p", "first"]);
    let id = env.only_session();
    // A second store (the same component under another id, so with its
    // own data folder), made the active one.
    store_copy(&env.home.path().join("extensions"), "other-store");
    env.scripted_settings(json!({"active": {"sessionStore": "other-store"}}));
    let expected = format!("session `{id}` was written by the session store `filesystem`");
    for args in [
        vec!["run", "-p", "--resume", id.as_str(), "next"],
        vec!["run", "-p", "-c", "next"],
    ] {
        let out = env.run(&args, "");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&expected) && stderr.contains("`other-store`"),
            "{args:?}: {stderr}"
        );
    }
    // The session itself is untouched.
    env.scripted_settings(json!({}));
    assert!(
        env.ok(&["session", "show", "--json", &id])
            .contains("\"one\"")
    );
}

#[test]
fn stud_with_a_prompt_is_stud_run() {
    let env = Env::new(json!([{"text": "one"}, {"text": "two"}]), json!({}));
    assert_eq!(env.ok(&["-p", "first"]).trim(), "one");
    assert_eq!(env.ok(&["-p", "-c", "second"]).trim(), "two");
    // A first word that names a command is still that command.
    assert!(env.ok(&["session", "list"]).contains(&env.only_session()));
}

#[test]
fn session_show_reads_as_a_conversation() {
    let env = Env::new(
        json!([
            {"text": "", "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "printf 'a\\nb\\nc\\n'"}}]},
            {"text": "Three lines.\u{1b}[2J"}
        ]),
        json!({"securityMode": {"mode": "yolo"}}),
    );
    env.ok(&["run", "-p", "count the lines"]);
    let shown = env.ok(&["session", "show", &env.only_session()]);
    assert!(shown.contains("provider scripted"), "{shown}");
    assert!(shown.contains("user:\n  count the lines"), "{shown}");
    assert!(shown.contains("-> bash {\"command\":"), "{shown}");
    assert!(shown.contains("= bash: a (+2 lines)"), "{shown}");
    assert!(shown.contains("assistant:\n  Three lines."), "{shown}");
    // What the model wrote cannot steer the terminal.
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
}

#[test]
fn drift_in_the_extension_set_is_reported_and_the_session_goes_on() {
    let env = Env::new(json!([{"text": "one"}, {"text": "two"}]), json!({}));
    common::install_fixture(env.home.path(), "counter");
    common::install_fixture(env.home.path(), "hostile");
    env.ok(&["run", "-p", "first"]);
    // One extension gone, another replaced by different bytes.
    std::fs::remove_dir_all(env.home.path().join("extensions").join("hostile")).unwrap();
    std::fs::copy(
        common::wasm("fixture_counter_v2.wasm"),
        env.home
            .path()
            .join("extensions")
            .join("counter")
            .join("fixture_counter.wasm"),
    )
    .unwrap();
    let out = env.ok(&[
        "run",
        "-p",
        "-c",
        "--output-format",
        "stream-json",
        "second",
    ]);
    let evs = events(&out);
    let drift: Vec<&str> = evs
        .iter()
        .filter(|e| e["event"] == "session.drift")
        .filter_map(|e| e["payload"]["message"].as_str())
        .collect();
    assert!(
        drift
            .iter()
            .any(|d| d.contains("`hostile`") && d.contains("no longer available")),
        "{drift:?}"
    );
    assert!(
        drift
            .iter()
            .any(|d| d.contains("`counter`") && d.contains("changed since")),
        "{drift:?}"
    );
    assert_eq!(event(&evs, "session.resumed")["payload"]["messages"], 2);
    let r = evs.last().unwrap();
    assert!(out.contains("\"two\""), "{r}");
}

#[test]
fn no_secret_value_reaches_session_files() {
    let key = "sk-test-SESSION-0123456789abcdef";
    let env = Env::new(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": "creds.txt"}))]},
            {"text": "done: {{tool_results}}"}
        ]),
        json!({}),
    );
    env.file("creds.txt", &format!("token={key}\n"));
    env.ok_with(&["run", "-p", "--yolo", "go"], &[("OPENAI_API_KEY", key)]);
    let id = env.only_session();
    let log = std::fs::read_to_string(env.sessions_dir().join(&id).join("log.jsonl")).unwrap();
    assert!(
        log.contains("token=") && log.contains("[REDACTED]"),
        "{log}"
    );
    // Only the file the test itself wrote may hold it.
    let hits = env.files_containing(key);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].ends_with("creds.txt"), "{hits:?}");
}

#[test]
fn a_long_session_warns_then_compacts_and_the_next_request_fits() {
    let env = StudEnv::new();
    env.settings(json!({
        "systemPrompt": "PINNED-RULE-42",
        "providers": {"scripted": {
            "script": {"repeat": true, "turns": [{"text": "noted {{messages}} | {{system}}"}]},
            "context-window": 4000
        }}
    }));
    env.file("AGENTS.md", "Always run the linter.\n");
    let prompt = "lorem ipsum dolor sit amet ".repeat(45);
    let (mut warned_at, mut compacted) = (None, None);
    for turn in 1..=16 {
        let mut args = vec!["run", "-p", "--no-tools", "--output-format", "stream-json"];
        if turn > 1 {
            args.push("-c");
        }
        args.push(&prompt);
        let out = env.ok(&args);
        let evs = events(&out);
        if warned_at.is_none() && evs.iter().any(|e| e["event"] == "context.warning") {
            warned_at = Some(turn);
        }
        if let Some(c) = evs.iter().find(|e| e["event"] == "context.compacted") {
            compacted = Some((turn, c.clone()));
            break;
        }
    }
    let warned_at = warned_at.expect("a warning at 80 %");
    let (turn, c) = compacted.expect("a compaction at 95 %");
    assert!(
        warned_at < turn,
        "warned at {warned_at}, compacted at {turn}"
    );
    let p = &c["payload"];
    assert_eq!(p["window"], 4000);
    let before = p["tokens_before"].as_u64().unwrap();
    let after = p["tokens_after"].as_u64().unwrap();
    assert!(before >= 3800, "{c}");
    assert!(
        after < 3200,
        "the next request fits under the warning line: {c}"
    );
    assert!(p["removed"].as_str().unwrap().contains("summarized"), "{c}");
    // The conversation goes on from the summary, with fewer messages, and
    // the pinned system prompt and project instructions still there.
    let out = env.ok(&["run", "-p", "--no-tools", "-c", "and now?"]);
    let (count, system) = out
        .trim()
        .trim_start_matches("noted ")
        .split_once(" | ")
        .unwrap();
    let count: usize = count.parse().unwrap();
    assert!(
        count < 2 * turn as usize,
        "{count} messages after compaction: {out}"
    );
    assert!(system.contains("PINNED-RULE-42"), "{out}");
    assert!(system.contains("Always run the linter."), "{out}");
    // The compaction was persisted: resuming starts from the compacted
    // history and does not compact the same turns again.
    let evs = events(&env.ok(&[
        "run",
        "-p",
        "--no-tools",
        "--output-format",
        "stream-json",
        "-c",
        "once more",
    ]));
    assert!(
        !evs.iter().any(|e| e["event"] == "context.compacted"),
        "compacted again on resume: {evs:?}"
    );
}

#[test]
fn old_tool_outputs_are_shortened_first() {
    let env = StudEnv::new();
    env.settings(json!({
        "compaction": {"keepRecent": 2},
        "providers": {"scripted": {
            "script": {"repeat": true, "turns": [
                {"text": "", "tool_calls": [call("read", json!({"path": "big.txt"}))]},
                {"text": "noted"}
            ]},
            "context-window": 4000
        }}
    }));
    let big: String = (1..=120)
        .map(|i| format!("row {i:03} of the big file\n"))
        .collect();
    env.file("big.txt", &big);
    let mut compacted = None;
    for turn in 1..=12 {
        let mut args = vec!["run", "-p", "--yolo", "--output-format", "stream-json"];
        if turn > 1 {
            args.push("-c");
        }
        args.push("go");
        let evs = events(&env.ok(&args));
        let all: Vec<Value> = evs
            .into_iter()
            .filter(|e| e["event"] == "context.compacted")
            .collect();
        if !all.is_empty() {
            compacted = Some(all);
            break;
        }
    }
    let all = compacted.expect("a compaction");
    // Shortening old outputs was enough: no summary, nothing dropped.
    assert_eq!(all.len(), 1, "{all:?}");
    let c = &all[0];
    let p = &c["payload"];
    assert_eq!(p["tier"], 1, "{c}");
    assert!(p["removed"].as_str().unwrap().contains("shortened"), "{c}");
    assert!(p["tokens_after"].as_u64().unwrap() < 3200, "{c}");
    // The session goes on.
    let out = env.ok(&["run", "-p", "--yolo", "-c", "go"]);
    assert_eq!(out.trim(), "noted");
}

#[test]
fn project_instructions_reach_the_request_and_environment_values_do_not() {
    use common::http::{Reply, TestServer};
    let env_value = "tok-ENV-9f8e7d6c5b4a";
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/streams/openai-text.sse"),
    )
    .unwrap();
    let server = TestServer::start(vec![Reply::sse(&text, 64)]);
    let env = StudEnv::new();
    env.settings(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}},
        "contextProviders": {"system-prompt-file": {"path": "leaky.md"}}
    }));
    env.file("AGENTS.md", "Always run the linter before committing.\n");
    env.file(
        "leaky.md",
        &format!("Use the token {env_value} for deploys.\n"),
    );
    let out = env.ok_with(
        &[
            "run",
            "-p",
            "--no-tools",
            "--output-format",
            "stream-json",
            "hi",
        ],
        &[("DEPLOY_TOKEN", env_value)],
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = String::from_utf8_lossy(&requests[0].body);
    assert!(
        body.contains("Always run the linter before committing."),
        "{body}"
    );
    assert!(
        !body.contains(env_value),
        "an environment value reached the model: {body}"
    );
    let evs = events(&out);
    let blocked = event(&evs, "context.blocked");
    assert_eq!(blocked["payload"]["extension"], "system-prompt-file");
    assert!(
        blocked["payload"]["reason"]
            .as_str()
            .unwrap()
            .contains("DEPLOY_TOKEN")
    );
}

/// A context provider with `[context] when-config` (the bundled
/// `system-prompt-file`, keyed on `path`) is neither read, linked nor
/// called while the person leaves that key empty (issue 42: a start pays
/// only for what adds something), and its file reaches the request once
/// they name one. `project-instructions`, which has no such key and whose
/// `AGENTS.md` is there, is linked either way.
#[test]
fn a_context_provider_takes_part_only_once_its_key_is_configured() {
    use common::http::{Reply, TestServer};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/streams/openai-text.sse"),
    )
    .unwrap();
    let server = TestServer::start(vec![Reply::sse(&text, 64), Reply::sse(&text, 64)]);
    let env = StudEnv::new();
    env.file("PROMPT.md", "Answer in haiku.\n");
    env.file("AGENTS.md", "Keep answers short.\n");
    let settings = |context: Value| {
        json!({
            "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
            "providers": {"openai-compatible": {"baseUrl": server.url()}},
            "contextProviders": context
        })
    };
    let run = || env.ok_stderr(&["--debug=stud=trace", "run", "-p", "--no-tools", "hi"]);

    env.settings(settings(json!({"system-prompt-file": {"path": ""}})));
    let err = run();
    for never in [
        "integrity{ext=system-prompt-file",
        "code{ext=system-prompt-file",
        "instantiate{ext=system-prompt-file",
    ] {
        assert!(!err.contains(never), "{never} with no `path`:\n{err}");
    }
    assert!(err.contains("load{ext=system-prompt-file"), "{err}");
    assert!(
        err.contains("instantiate{ext=project-instructions"),
        "{err}"
    );

    env.settings(settings(
        json!({"system-prompt-file": {"path": "PROMPT.md"}}),
    ));
    let err = run();
    assert!(err.contains("instantiate{ext=system-prompt-file"), "{err}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let bodies: Vec<_> = requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(!bodies[0].contains("Answer in haiku."), "{}", bodies[0]);
    assert!(bodies[1].contains("Answer in haiku."), "{}", bodies[1]);
}

/// `project-instructions` declares `[context.when-project-has]`
/// (`AGENTS.md`, `STUD.md`, or its `files` config): in a project with
/// none of them it is neither read, linked nor called (issue 42), an
/// `AGENTS.md` made while the session runs reaches its next request (the
/// names are looked up before each one), and a `files` list in its config
/// replaces the names.
#[test]
fn a_context_provider_takes_part_only_where_the_project_has_its_files() {
    use common::http::{Reply, TestServer};
    let stream = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/streams")
                .join(name),
        )
        .unwrap()
    };
    let env = StudEnv::new();
    env.file("notes.txt", "The note says hello.\n");
    let agents = env.project.path().join("AGENTS.md");
    // The first answer (a `read` call) waits until AGENTS.md exists, which
    // the test makes once the first request, composed without it, is in.
    let server = TestServer::start(vec![
        Reply::sse(&stream("openai-tool.sse"), 64).once_exists(agents.clone()),
        Reply::sse(&stream("openai-text.sse"), 64),
        Reply::sse(&stream("openai-text.sse"), 64),
        Reply::sse(&stream("openai-text.sse"), 64),
        Reply::sse(&stream("openai-text.sse"), 64),
    ]);
    let settings = |context: Value| {
        json!({
            "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
            "providers": {"openai-compatible": {"baseUrl": server.url()}},
            "contextProviders": context
        })
    };
    env.settings(settings(json!({})));
    let requests = server.requests_handle();
    let maker = std::thread::spawn({
        let agents = agents.clone();
        move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while requests.lock().unwrap().is_empty() {
                assert!(std::time::Instant::now() < deadline, "no first request");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            std::fs::write(&agents, "Always cite the file.\n").unwrap();
        }
    });
    let err = env.ok_stderr(&[
        "--debug=stud=trace",
        "run",
        "-p",
        "--yolo",
        "What does notes.txt say?",
    ]);
    maker.join().unwrap();
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 2, "{err}");
    assert!(
        !bodies[0].contains("Always cite the file."),
        "{}",
        bodies[0]
    );
    assert!(bodies[1].contains("Always cite the file."), "{}", bodies[1]);
    // Before the file existed nothing of it ran: its first link and
    // instance come after the first request's stage had ended.
    let first_request = err
        .find("stage{name=send-request}: ")
        .unwrap_or_else(|| panic!("no send-request stage:\n{err}"));
    for before in [
        "integrity{ext=project-instructions",
        "code{ext=project-instructions",
        "instantiate{ext=project-instructions",
    ] {
        let at = err
            .find(before)
            .unwrap_or_else(|| panic!("no {before}:\n{err}"));
        assert!(
            at > first_request,
            "{before} before the first request:\n{err}"
        );
    }

    // Its config's list replaces the names. With AGENTS.md gone, only the
    // config's RULES.md can make it take part.
    std::fs::remove_file(&agents).unwrap();
    env.file("RULES.md", "Answer in French.\n");
    env.settings(settings(
        json!({"project-instructions": {"files": ["RULES.md"]}}),
    ));
    env.ok_stderr(&["run", "-p", "--no-tools", "hi"]);
    let third = String::from_utf8_lossy(&server.requests()[2].body).into_owned();
    assert!(third.contains("Answer in French."), "{third}");

    // The second of the manifest's names counts as much as the first.
    env.file("STUD.md", "Prefer small commits.\n");
    env.settings(settings(json!({})));
    env.ok_stderr(&["run", "-p", "--no-tools", "hi"]);
    let fourth = String::from_utf8_lossy(&server.requests()[3].body).into_owned();
    assert!(fourth.contains("Prefer small commits."), "{fourth}");

    // And where none of the names its config lists exists (RULES.md and
    // STUD.md are there, but not named), nothing of it runs at all.
    env.settings(settings(
        json!({"project-instructions": {"files": ["MISSING.md"]}}),
    ));
    let err = env.ok_stderr(&["--debug=stud=trace", "run", "-p", "--no-tools", "hi"]);
    let fifth = String::from_utf8_lossy(&server.requests()[4].body).into_owned();
    assert!(!fifth.contains("Prefer small commits."), "{fifth}");
    assert!(err.contains("load{ext=project-instructions"), "{err}");
    for never in [
        "integrity{ext=project-instructions",
        "code{ext=project-instructions",
        "instantiate{ext=project-instructions",
    ] {
        assert!(!err.contains(never), "{never} with no file to read:\n{err}");
    }
}

#[test]
fn usage_is_priced_and_the_budget_stops_the_session() {
    let env = Env::new(
        json!([{"text": "one"}, {"text": "two"}]),
        json!({"pricing": {"scripted": {"input": 1000.0, "output": 2000.0}}}),
    );
    let out = env.ok(&[
        "run",
        "-p",
        "--output-format",
        "stream-json",
        "--max-cost",
        "0.001",
        "first",
    ]);
    let evs = events(&out);
    let end = event(&evs, "turn.end");
    let cost = end["payload"]["cost_usd"].as_f64().unwrap();
    let usage = &end["payload"]["usage"];
    let expected = usage["input_tokens"].as_f64().unwrap() * 1000.0 / 1e6
        + usage["output_tokens"].as_f64().unwrap() * 2000.0 / 1e6;
    assert!((cost - expected).abs() < 1e-9 && cost > 0.001, "{end}");
    // The budget is spent: the next turn stops before any request.
    let out = env.run(
        &[
            "run",
            "-p",
            "-c",
            "--output-format",
            "json",
            "--max-cost",
            "0.001",
            "second",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["error_code"], "budget-exceeded", "{r}");
    assert!(r["error"].as_str().unwrap().contains("--max-cost"), "{r}");
    // Refused before the input was taken: no unanswered message is kept.
    let shown = env.ok(&["session", "show", "--json", &env.only_session()]);
    let messages: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with(r#"{"type":"message""#))
        .collect();
    assert!(messages.iter().any(|m| m.contains("\"first\"")), "{shown}");
    assert!(
        !messages.iter().any(|m| m.contains("\"second\"")),
        "{shown}"
    );
    // A replay refuses the second prompt the same way: the budget is kept
    // with the trace.
    let id = env.only_session();
    let replayed = env.run(&["session", "replay", &id, "--json"], "");
    let report = String::from_utf8_lossy(&replayed.stdout);
    assert_eq!(replayed.status.code(), Some(0), "{report}");
    assert!(report.contains("\"divergences\": []"), "{report}");
}

#[test]
fn a_context_overflow_from_the_provider_compacts_and_retries_once() {
    use common::http::{Reply, TestServer};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/streams/openai-text.sse"),
    )
    .unwrap();
    let server = TestServer::start(vec![
        Reply::new(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        ),
        Reply::sse(&text, 64),
    ]);
    let env = StudEnv::new();
    env.settings(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}}
    }));
    let out = env.ok(&[
        "run",
        "-p",
        "--no-tools",
        "--output-format",
        "stream-json",
        "hi",
    ]);
    let evs = events(&out);
    let failed = event(&evs, "provider.request.failed");
    assert_eq!(failed["payload"]["code"], "context-overflow", "{failed}");
    assert!(
        evs.iter().all(|e| e["event"] != "provider.retry"),
        "an overflow is not retried by backoff"
    );
    assert_eq!(server.requests().len(), 2, "compacted and sent once more");
    let r: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(r["status"], "ok", "{r}");
}

/// Two `stud -c` on one session at once would interleave its log: the
/// second is refused while the first runs, and works once it ended.
#[test]
fn a_session_is_open_in_one_process_at_a_time() {
    let env = Env::new(
        json!([{"text": "one"}, {"text": "two", "sleep_ms": 3000}, {"text": "three"}]),
        json!({}),
    );
    assert_eq!(env.ok(&["run", "-p", "first"]).trim(), "one");
    let id = env.only_session();
    let (mut slow, _, rest) = env.start_until(
        &[
            "run",
            "-p",
            "-c",
            "--output-format",
            "stream-json",
            "second",
        ],
        "provider.request.started",
    );
    let out = env
        .command(&["run", "-p", "-c", "third"])
        .output()
        .expect("run stud");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("session {id} is open in another stud process")),
        "{stderr}"
    );
    let rest: Vec<String> = rest.map_while(Result::ok).collect();
    assert!(slow.wait().expect("wait").success(), "{rest:?}");
    assert_eq!(env.ok(&["run", "-p", "-c", "third"]).trim(), "three");
}

/// Every session folder a store under `data/project/` keeps (a project
/// extension's data folder).
fn project_store_sessions(env: &Env) -> Vec<String> {
    let mut found = Vec::new();
    common::walk(&env.home.path().join("data/project"), &mut |p| {
        if p.ends_with("manifest.json") {
            found.push(p.display().to_string());
        }
    });
    found
}

/// The attack (issue 34, review two): a trusted project ships a session
/// store of its own and names it in `active.sessionStore`. A store writes
/// the manifests resume believes (the state machine a session ran, the
/// project root the same-folder check compares), so a project's store
/// could forge them. `active.sessionStore` is read from the global
/// settings only, and a project's store is never chosen by default, not
/// even when the user's own failed to load.
#[test]
fn a_project_cannot_choose_the_session_store() {
    let env = Env::new(json!([{"text": "one"}, {"text": "two"}]), json!({}));
    let stud = env.project.path().join(".stud");
    store_copy(&stud.join("extensions"), "team-store");
    std::fs::write(
        stud.join("settings.json"),
        json!({"active": {"sessionStore": "team-store"}}).to_string(),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let out = env.run(&["run", "-p", "first"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        project_store_sessions(&env).is_empty(),
        "the project's store kept the session: {stderr}"
    );
    env.only_session();
    assert!(
        stderr.contains("active.sessionStore is only read from the global settings"),
        "{stderr}"
    );

    // The user's store fails to load (a bad config of theirs): no store
    // keeps the session, rather than the project's.
    env.scripted_settings(json!({"sessionStores": {"filesystem": {"fsync": "yes"}}}));
    let out = env.run(&["run", "-p", "second"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("`filesystem`"), "{stderr}");
    assert!(
        project_store_sessions(&env).is_empty(),
        "the project's store kept the session: {stderr}"
    );
}

/// Each request sent to the provider is recorded as the digest of its
/// canonical form: the same session run twice (in the same folder) records
/// the same digests; another prompt records another.
#[test]
fn each_request_is_recorded_as_a_digest_that_repeats_exactly() {
    let env = Env::new(
        json!([
            {"text": "", "tool_calls": [common::call("read", json!({"path": "notes.txt"}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    env.file("notes.txt", "some notes\n");
    let digests = |prompt: &str| {
        let out = env.ok(&[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            prompt,
        ]);
        events(&out)
            .iter()
            .filter(|e| e["event"] == "provider.request.sent")
            .map(|e| {
                let sha = e["payload"]["sha256"].as_str().expect("sha256").to_string();
                assert_eq!(sha.len(), 64, "{e}");
                assert!(e["payload"]["bytes"].as_u64().unwrap() > 0, "{e}");
                sha
            })
            .collect::<Vec<_>>()
    };
    let first = digests("read the notes");
    assert_eq!(first.len(), 2, "{first:?}");
    assert_ne!(first[0], first[1], "the second request carries the result");
    assert_eq!(digests("read the notes"), first);
    assert_ne!(digests("read the notes, please")[0], first[0]);
}

#[test]
fn a_config_this_binary_found_valid_is_not_checked_again() {
    use common::http::{Reply, TestServer};
    const NOTED: &str = "config found valid by this binary before";
    let env = StudEnv::new();
    let server = TestServer::start(
        (0..3)
            .map(|_| Reply::sse(&common::recorded_stream("openai-text.sse"), 64))
            .collect(),
    );
    // A header no other run has: the shared cache may hold notes of
    // earlier runs of this test.
    let unique = format!("{:?}", std::time::SystemTime::now());
    let settings = |base: &str| {
        json!({
            "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
            "providers": {"openai-compatible": {"baseUrl": base, "headers": {"x-run": unique}}}
        })
    };
    env.settings(settings(&server.url()));
    let args = ["--debug", "run", "-p", "Say hello."];
    let first = env.ok_stderr(&args);
    assert!(!first.contains(NOTED), "{first}");
    let second = env.ok_stderr(&args);
    assert!(second.contains(NOTED), "{second}");

    // Another binary file (a copy) checks it again.
    let copy = env.home.path().join("stud-copy");
    std::fs::copy(env!("CARGO_BIN_EXE_stud"), &copy).unwrap();
    let same = env.command(&args);
    let out = std::process::Command::new(&copy)
        .args(args)
        .envs(same.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env_remove("RUST_LOG")
        .current_dir(env.project.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains(NOTED), "{err}");
    assert_eq!(server.requests().len(), 3);

    // A config the schema refuses is refused every time: it is never noted.
    env.settings(settings("ftp://127.0.0.1/v1"));
    for _ in 0..2 {
        let out = env.command(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        // The missing provider is named with why it did not load.
        assert!(
            err.contains("provider `openai-compatible` did not load")
                && err.contains("at `/baseUrl`")
                && err.contains("^https?://"),
            "{err}"
        );
        assert!(!err.contains(NOTED), "{err}");
    }
}
