//! The default tools end to end: the `stud` binary, the scripted provider,
//! real temporary project folders.

use crate::common;

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
    fn new(turns: Value) -> Self {
        let env = StudEnv::new();
        env.script(turns, json!({}));
        Env(env)
    }

    /// One headless yolo turn; its JSON result.
    fn turn(&self, extra_env: &[(&str, &str)]) -> Value {
        let out = self.ok_with(
            &["run", "-p", "--yolo", "--output-format", "json", "go"],
            extra_env,
        );
        serde_json::from_str(out.lines().last().unwrap()).unwrap()
    }
}

fn answer(result: &Value) -> &str {
    result["result"].as_str().unwrap()
}

#[test]
fn the_model_reads_and_edits_a_file_and_the_disk_changes_exactly() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("grep", json!({"pattern": "fn old"}))]},
        {"text": "", "tool_calls": [call("read", json!({"path": "src/lib.rs"}))]},
        {"text": "", "tool_calls": [call("edit", json!({"path": "src/lib.rs", "old_string": "fn old()", "new_string": "fn renamed()"}))]},
        {"text": "", "tool_calls": [call("multi-edit", json!({"path": "src/lib.rs", "edits": [
            {"old_string": "1 + 1", "new_string": "2"},
            {"old_string": "// end", "new_string": "// done"}
        ]}))]},
        {"text": "", "tool_calls": [call("write", json!({"path": "notes/new.md", "content": "# New\n"}))]},
        {"text": "{{tool_results}}"}
    ]));
    std::fs::create_dir(env.project.path().join("src")).unwrap();
    env.file("src/lib.rs", "fn old() -> i32 {\n    1 + 1\n}\n// end\n");
    let result = env.turn(&[]);
    assert_eq!(
        env.read("src/lib.rs"),
        "fn renamed() -> i32 {\n    2\n}\n// done\n"
    );
    assert_eq!(env.read("notes/new.md"), "# New\n");
    let text = answer(&result);
    assert!(text.contains("src/lib.rs:1:fn old() -> i32 {"), "{text}");
    assert!(text.contains("Created `notes/new.md`"), "{text}");
}

#[test]
fn grep_and_glob_respect_gitignore() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [
            call("grep", json!({"pattern": "needle", "glob": "*.rs"})),
            call("glob", json!({"pattern": "**/*.rs"}))
        ]},
        {"text": "{{tool_results}}"}
    ]));
    for dir in ["src/deep", "target"] {
        std::fs::create_dir_all(env.project.path().join(dir)).unwrap();
    }
    env.file(".gitignore", "target/\n");
    env.file("src/a.rs", "let needle = 1;\n");
    env.file("src/deep/b.rs", "// no\n// NEEDLE\nneedle();\n");
    env.file("src/c.txt", "needle in a text file\n");
    env.file("target/gen.rs", "needle in ignored output\n");
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(text.contains("src/a.rs:1:let needle = 1;"), "{text}");
    assert!(text.contains("src/deep/b.rs:3:needle();"), "{text}");
    assert!(
        !text.contains("target/gen.rs"),
        "ignored file searched: {text}"
    );
    assert!(!text.contains("c.txt"), "glob filter ignored: {text}");
    assert!(text.contains("src/a.rs\nsrc/deep/b.rs"), "{text}");
}

#[test]
fn an_ambiguous_edit_lists_both_places_and_changes_nothing() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("edit", json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}))]},
        {"text": "{{tool_results}}"}
    ]));
    env.file("a.txt", "x = 1\ny = 0\nx = 1\n");
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(
        text.contains("ambiguous-match") && text.contains("line 1, line 3"),
        "{text}"
    );
    assert_eq!(env.read("a.txt"), "x = 1\ny = 0\nx = 1\n");
}

#[test]
fn large_and_binary_files_get_limits_and_messages() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [
            call("read", json!({"path": "big.txt"})),
            call("read", json!({"path": "big.txt", "offset": 39999, "limit": 5})),
            call("read", json!({"path": "blob.bin"})),
            call("edit", json!({"path": "blob.bin", "old_string": "a", "new_string": "b"})),
            call("edit", json!({"path": "small.txt", "old_string": "absent", "new_string": "b"})),
            call("multi-edit", json!({"path": "small.txt", "edits": [
                {"old_string": "one", "new_string": "ONE"},
                {"old_string": "absent", "new_string": "x"}
            ]}))
        ]},
        {"text": "{{tool_results}}"}
    ]));
    let big: String = (1..=40_000).map(|i| format!("line {i}\n")).collect();
    env.file("big.txt", &big);
    std::fs::write(env.project.path().join("blob.bin"), b"a\0b\0c").unwrap();
    env.file("small.txt", "one\ntwo\n");
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(
        text.contains(
            "`big.txt` is 428894 bytes (over 262144); read it in parts with offset and limit"
        ),
        "{text}"
    );
    assert!(
        text.contains(" 39999\tline 39999\n 40000\tline 40000\n"),
        "{text}"
    );
    assert!(
        text.contains("`blob.bin` looks binary; read only text files"),
        "{text}"
    );
    assert!(
        text.contains("`blob.bin` looks binary (it contains NUL bytes)"),
        "{text}"
    );
    // Nothing matched: a message, and multi-edit is all or nothing.
    assert_eq!(text.matches("error [no-match]").count(), 2, "{text}");
    assert!(text.contains("(no edit was applied)"), "{text}");
    assert_eq!(env.read("small.txt"), "one\ntwo\n");
    assert_eq!(
        std::fs::read(env.project.path().join("blob.bin")).unwrap(),
        b"a\0b\0c"
    );
}

#[test]
fn reading_a_pipe_is_refused_instead_of_hanging() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("read", json!({"path": "pipe"}))]},
        {"text": "", "tool_calls": [call("edit", json!({"path": "pipe", "old_string": "a", "new_string": "b"}))]},
        {"text": "{{tool_results}}"}
    ]));
    let made = std::process::Command::new("mkfifo")
        .arg(env.project.path().join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    // Opening a FIFO without a writer would block the call forever.
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(text.contains("`pipe` is not a regular file"), "{text}");
}

#[test]
fn paths_outside_the_project_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    let env = Env::new(json!([
        {"text": "", "tool_calls": [
            call("read", json!({"path": "../outside.txt"})),
            call("read", json!({"path": "link/secret.txt"})),
            call("write", json!({"path": "link/secret.txt", "content": "overwritten"})),
            call("read", json!({"path": outside.path().join("secret.txt").to_str().unwrap()}))
        ]},
        {"text": "{{tool_results}}"}
    ]));
    std::os::unix::fs::symlink(outside.path(), env.project.path().join("link")).unwrap();
    let result = env.turn(&[]);
    let text = answer(&result);
    assert_eq!(
        text.matches("error [forbidden]").count() + text.matches("error [io]").count(),
        4,
        "{text}"
    );
    assert!(text.contains("leaves the project directory"), "{text}");
    assert!(text.contains("outside the project directory"), "{text}");
    // The symlink escapes (read and write) say what happened.
    assert_eq!(
        text.matches("`link/secret.txt`: not permitted: it leads outside the project directory (through a symbolic link)").count(),
        2,
        "{text}"
    );
    assert!(
        !text.contains("outside\n"),
        "the outside file was read: {text}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "outside\n"
    );
}

#[test]
fn a_tool_without_the_write_grant_cannot_write_even_through_wasi() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("hostile", json!({"mode": "write"}))]},
        {"text": "{{tool_results}}"}
    ]));
    common::install_fixture(env.home.path(), "hostile");
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(text.starts_with("error [forbidden]"), "{text}");
    assert!(!env.project.path().join("hacked.txt").exists());
}

#[test]
fn bash_runs_in_the_project_with_a_clean_environment_and_a_timeout() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("bash", json!({"command": "pwd; ls; echo key=${OPENAI_API_KEY:-unset}; exit 3"}))]},
        // The shell forks `sleep`: the timeout must stop both, not leave
        // the sleep holding the output open for 30 s.
        {"text": "", "tool_calls": [call("bash", json!({"command": "sleep 30; echo never", "timeout_ms": 300}))]},
        {"text": "still going: {{tool_results}}"}
    ]));
    env.file("here.txt", "");
    let started = std::time::Instant::now();
    let result = env.turn(&[("OPENAI_API_KEY", "sk-test-must-not-leak-1234567890")]);
    let took = started.elapsed();
    let text = answer(&result);
    let project = env.project.path().canonicalize().unwrap();
    assert!(text.contains(project.to_str().unwrap()), "{text}");
    assert!(
        text.contains("here.txt") && text.contains("key=unset") && text.contains("[exit code 3]"),
        "{text}"
    );
    assert!(!text.contains("sk-test-must-not-leak"), "{text}");
    assert!(
        text.contains("still going:") && text.contains("[stopped after 300 ms: timeout]"),
        "{text}"
    );
    assert!(!text.contains("never"), "{text}");
    // Not a speed target: 30 s would mean the forked sleep kept running.
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
}

/// Whether this kernel offers Landlock (what stud's process sandbox uses).
fn landlock_available() -> bool {
    use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V2))
        .and_then(|r| r.create())
        .is_ok()
}

#[test]
fn bash_writes_inside_the_project_only_unless_the_sandbox_is_off() {
    // stud's temp folder is writable for processes: give it one of its own
    // so the folder outside is outside everything granted.
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    let line = format!(
        "echo inside > inside.txt; echo pwned > {}; echo done",
        victim.display()
    );
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("bash", json!({"command": line}))]},
        {"text": "{{tool_results}}"}
    ]));
    let run = || {
        env.command(&["run", "-p", "--yolo", "--output-format", "json", "go"])
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap()
    };
    let out = run();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(env.read("inside.txt"), "inside\n");
    if landlock_available() {
        assert!(!victim.exists(), "written outside the project: {stdout}");
        assert!(stdout.contains("Permission denied"), "{stdout}");
    } else {
        assert!(stderr.contains("no Landlock"), "{stderr}");
    }
    // Sandbox off: the same command may write there.
    env.scripted_settings(json!({"runtime": {"processSandbox": {"mode": "off"}}}));
    let out = run();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "pwned\n");
}

#[test]
fn ask_user_in_a_headless_run_tells_the_model() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("ask-user", json!({"question": "Which file?"}))]},
        {"text": "{{tool_results}}"}
    ]));
    // --yolo answers questions in headless runs; without it the tool errors.
    let out = env.ok(&["run", "-p", "--output-format", "json", "go"]);
    let v: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert!(answer(&v).contains("headless"), "{v}");
}

#[test]
fn long_tool_output_is_cut_with_a_marker() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("bash", json!({"command": "seq 1 5000"}))]},
        {"text": "{{tool_results}}"}
    ]));
    let settings = json!({"providers": {"scripted": {"script-file": "script.json"}}, "runtime": {"toolOutputLimit": 2000}});
    env.settings(settings);
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(text.starts_with("1\n2\n3\n"), "{text}");
    assert!(!text.contains("\n4999\n"), "not cut: {}", text.len());
    assert!(
        text.contains("[output truncated: 2000 of 23893 bytes shown."),
        "{text}"
    );
    assert!(text.contains("head, tail or grep"), "{text}");
}

#[test]
fn web_fetch_reaches_granted_hosts_only() {
    use common::http::{Reply, TestServer};
    let page = "<html><head><title>T</title></head><body><h1>Release notes</h1><p>Version <b>2.0</b> is out.</p><script>evil()</script></body></html>";
    let granted = TestServer::start(vec![
        Reply::new(200, page).header("content-type", "text/html; charset=utf-8"),
    ]);
    let other = TestServer::start(vec![Reply::new(200, "never")]);
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("web-fetch", json!({"url": format!("{}/notes.html", granted.url())}))]},
        {"text": "", "tool_calls": [call("web-fetch", json!({"url": format!("http://localhost:{}/", other.addr.port())}))]},
        {"text": "{{tool_results}}"}
    ]));
    let settings = json!({
        "providers": {"scripted": {"script-file": "script.json"}},
        "network": {"web-fetch": ["127.0.0.1"]}
    });
    env.settings(settings);
    let result = env.turn(&[]);
    let text = answer(&result);
    assert!(
        text.contains("Release notes") && text.contains("2.0") && text.contains("is out."),
        "{text}"
    );
    assert!(text.contains("untrusted"), "{text}");
    assert!(!text.contains("<p>"), "HTML not converted: {text}");
    assert!(
        text.contains("`web-fetch` may not connect to `localhost:")
            && text.contains("network.web-fetch"),
        "{text}"
    );
    assert_eq!(granted.requests().len(), 1);
    assert_eq!(granted.requests()[0].path, "/notes.html");
    assert_eq!(
        other.requests().len(),
        0,
        "a request reached an ungranted host"
    );
}

#[test]
fn an_allowlist_entry_approves_only_what_it_names() {
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("bash", json!({"command": "echo one > one.txt && echo two > two.txt"}))]},
        {"text": "", "tool_calls": [call("bash", json!({"command": "echo three > three.txt; touch pwned"}))]},
        {"text": "{{tool_results}}"}
    ]));
    let run = |allow: &[&str]| env.run_allowlist(allow);
    // Every simple command of the first line is an `echo` and it writes
    // only `.txt` files (each redirection is a key line of its own):
    // approved. The second chains a `touch`: a person must decide, and
    // headless halts.
    let out = run(&["bash:echo *", "bash:> *.txt"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"status\":\"halted\""), "{stdout}");
    assert_eq!(env.read("one.txt"), "one\n");
    assert_eq!(env.read("two.txt"), "two\n");
    assert!(!env.project.path().join("three.txt").exists());
    assert!(!env.project.path().join("pwned").exists());

    // A path tool keys on the path it really touches.
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "src/../outside-src.txt", "content": "x"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    let out = run(&["write:src/*"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!env.project.path().join("outside-src.txt").exists());
    let out = run(&["write:src/*", "write:outside-src.txt"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("outside-src.txt"), "x");
}

#[test]
fn ctrl_c_during_a_command_stops_it_and_what_it_started() {
    use std::process::Command;
    use std::time::{Duration, Instant};
    // A marker no other process has, to look for leftovers.
    let marker = format!("{}.{}", 30 + std::process::id() % 1000, 4711);
    let line = format!("sleep {marker}; echo never > after.txt");
    let env = Env::new(json!([
        {"text": "", "tool_calls": [call("bash", json!({"command": line}))]},
        {"text": "not reached"}
    ]));
    let (mut child, _, lines) = env.start_until(
        &[
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ],
        "tool.started",
    );
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    common::signal(&child, "INT");
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    // Not a speed target: 30 s would mean the turn waited for the sleep.
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(
        rest.iter().any(|l| l.contains("\"tool.cancelled\"")),
        "{rest:?}"
    );
    let left = Command::new("pgrep")
        .args(["-f", &format!("sleep {marker}")])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the forked sleep outlived the cancel: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert!(!env.project.path().join("after.txt").exists());
}
