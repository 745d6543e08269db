//! Who acts, not what it is called (issue 34, hole 2 and the `stud ext
//! dev` bullet): an extension is (scope, id, digest). Attacks through the
//! `stud` binary: a project or global extension taking a bundled id (the
//! interactor `console`, the guard `protect-paths`, the tool `bash`), a
//! project UI taking the place a global setting names, a tool named like a
//! bundled or MCP tool, a dev link under a bundled id, and a dev folder's
//! bytes swapped after the session pinned them.

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::screen::Screen;
use common::stream::named;
use common::{StudEnv, call};
use serde_json::{Value, json};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn all_text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out))
}

/// Copy `fixture` into `dir` (manifest and component) with the id `id`.
fn fixture_as(fixture: &str, dir: &Path, id: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let src = common::fixture_dir(fixture);
    let text = std::fs::read_to_string(src.join("extension.toml"))
        .expect("fixture manifest")
        .replace(&format!("id = \"{fixture}\""), &format!("id = \"{id}\""));
    let component = text
        .lines()
        .find_map(|l| l.strip_prefix("component = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("component line")
        .to_string();
    std::fs::write(dir.join("extension.toml"), text).expect("write manifest");
    std::fs::copy(common::wasm(&component), dir.join(&component)).expect("copy component");
    dir.to_path_buf()
}

/// A project extension folder `.stud/extensions/<id>` holding `fixture`.
fn project_extension(env: &StudEnv, fixture: &str, id: &str) -> PathBuf {
    fixture_as(
        fixture,
        &env.project.path().join(".stud/extensions").join(id),
        id,
    )
}

/// A global extension folder `~/.stud/extensions/<id>` holding `fixture`.
fn global_extension(env: &StudEnv, fixture: &str, id: &str) -> PathBuf {
    fixture_as(fixture, &env.home.path().join("extensions").join(id), id)
}

fn project_settings(env: &StudEnv, settings: Value) {
    let dir = env.project.path().join(".stud");
    std::fs::create_dir_all(&dir).expect("mkdir .stud");
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("write settings");
}

/// `stud ARGS` with stdin held open (a terminal nobody types into) until
/// it exits; stream-json events and the result line.
fn run_idle(env: &StudEnv, args: &[&str]) -> (Vec<Value>, Output) {
    let mut child = env
        .command(args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start stud");
    let stdin = child.stdin.take();
    let out = child.wait_with_output().expect("wait for stud");
    drop(stdin);
    let events = common::stream::events(&String::from_utf8_lossy(&out.stdout));
    (events, out)
}

/// An interactive run (nobody typing) in which nothing may approve the
/// hostile call: no answer accepted it and it did not run. All it printed.
fn run_unapproved(env: &StudEnv) -> String {
    let (events, out) = run_idle(env, &["run", "--output-format", "stream-json", "go"]);
    let accepted: Vec<&Value> = named(&events, "interaction.answered")
        .into_iter()
        .filter(|e| e["payload"]["status"] == "accepted")
        .collect();
    assert!(accepted.is_empty(), "approved by {accepted:?}");
    assert!(named(&events, "tool.succeeded").is_empty(), "the tool ran");
    all_text(&out)
}

/// The hostile tool is called once; approvals time out after 500 ms.
fn hostile_call(env: &StudEnv, extra: Value) {
    env.install("hostile");
    let mut settings = json!({"runtime": {"interactionTimeoutMs": 500}});
    common::merge(&mut settings, extra);
    env.script(
        json!([
            {"text": "", "tool_calls": [call("hostile", json!({"mode": "ok"}))]},
            {"text": "{{tool_results}}"}
        ]),
        settings,
    );
}

/// A trusted project ships a UI under the id `console`, the default
/// interactor, configured to accept everything. It must not answer the
/// approval: a project extension never takes a bundled id (the folder is
/// refused, by name), so the bundled console asks and, with nobody
/// typing, the question times out as a denial.
#[test]
fn a_project_console_cannot_answer_approvals() {
    let env = StudEnv::new();
    hostile_call(&env, json!({}));
    project_extension(&env, "auto-ui", "console");
    project_settings(
        &env,
        json!({"ui": {"console": {"accept": true, "delay-ms": 0}}}),
    );
    let shown = env.ok(&["trust", "grant"]);
    let text = run_unapproved(&env);
    assert!(
        text.contains(".stud/extensions/console/extension.toml")
            && text.contains("reserved for the bundled extension"),
        "{text}"
    );
    assert!(
        shown.contains("`console`") && shown.contains("reserved"),
        "the review must say the folder is refused:\n{shown}"
    );
}

/// A trusted project ships a hook under the id `protect-paths` (an
/// observer that guards nothing): the bundled guard must stay, and
/// `.env` stays unread.
#[test]
fn a_project_cannot_replace_the_protect_paths_guard() {
    let env = StudEnv::new();
    env.file(".env", "API_KEY=very-secret-value\n");
    project_extension(&env, "recorder", "protect-paths");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("read", json!({"path": ".env"}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
    env.ok(&["trust", "grant"]);
    let out = env
        .command(&["run", "-p", "--yolo", "--output-format", "json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = all_text(&out);
    assert!(!text.contains("very-secret-value"), "{text}");
    assert!(text.contains("denied by guard `protect-paths`"), "{text}");
    assert!(
        text.contains(".stud/extensions/protect-paths/extension.toml"),
        "{text}"
    );
}

/// The user's global settings choose the interactor `my-ui` (a global UI
/// that says no); a trusted project brings its own `my-ui` that says yes.
/// The setting names the user's extension: a project extension is never
/// the interactor, so nobody answers and the call does not run.
#[test]
fn a_project_ui_cannot_become_the_interactor_a_global_setting_names() {
    let env = StudEnv::new();
    hostile_call(
        &env,
        json!({"active": {"interactor": "my-ui"}, "ui": {"my-ui": {"accept": false, "delay-ms": 0}}}),
    );
    global_extension(&env, "auto-ui", "my-ui");
    project_extension(&env, "auto-ui", "my-ui");
    project_settings(
        &env,
        json!({"ui": {"my-ui": {"accept": true, "delay-ms": 0}}}),
    );
    let shown = env.ok(&["trust", "grant"]);
    let text = run_unapproved(&env);
    assert!(
        text.contains("`my-ui`") && text.contains("project extension"),
        "{text}"
    );
    assert!(
        shown.contains("replaces your global ui extension `my-ui`"),
        "{shown}"
    );
}

/// A global extension folder with a bundled id is refused by name (it
/// does not replace the bundled `bash`), and `stud ext install` refuses
/// one before asking anything.
#[test]
fn a_global_extension_cannot_take_a_bundled_id() {
    let env = StudEnv::new();
    global_extension(&env, "hostile", "bash");
    let out = env
        .command(&["ext", "list", "--json"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let bash = v["extensions"]
        .as_array()
        .expect("list")
        .iter()
        .find(|e| e["id"] == "bash")
        .expect("bash listed")
        .clone();
    assert_eq!(bash["scope"], "bundled", "{bash}");
    let text = all_text(&out);
    assert!(
        text.contains("extensions/bash/extension.toml")
            && text.contains("reserved for the bundled extension"),
        "{text}"
    );

    let work = tempfile::tempdir().expect("tempdir");
    let folder = fixture_as("hostile", &work.path().join("read"), "read");
    let out = env.run(
        &["ext", "install", folder.to_str().expect("utf-8"), "--yes"],
        "",
    );
    assert!(!out.status.success(), "installed: {}", all_text(&out));
    assert!(
        stderr(&out).contains("`read`") && stderr(&out).contains("reserved"),
        "{}",
        stderr(&out)
    );
    assert!(
        !env.home.path().join("extensions.lock").exists()
            || !std::fs::read_to_string(env.home.path().join("extensions.lock"))
                .expect("lock")
                .contains("[extensions.read]")
    );
}

/// A tool extension that names its tool `bash` (with the bundled `bash`
/// left out of the run) or `mcp__github__pwn` would be approved by the
/// allowlist entries meant for the bundled shell and for a GitHub MCP
/// server. Its tool is refused; the call finds no such tool.
#[test]
fn a_tool_cannot_take_a_bundled_or_mcp_tool_name() {
    for (name, allow) in [("bash", "bash"), ("mcp__github__pwn", "mcp__github__*")] {
        let env = StudEnv::new();
        global_extension(&env, "hostile", "impostor");
        env.script(
            json!([
                {"text": "", "tool_calls": [call(name, json!({"mode": "ok"}))]},
                {"text": "result: {{tool_results}}"}
            ]),
            json!({"tools": {"impostor": {"name": name}}}),
        );
        let out = env
            .command(&[
                "run",
                "-p",
                "--mode",
                "allowlist",
                "--allow",
                allow,
                "--disable",
                "bash",
                "--output-format",
                "json",
                "go",
            ])
            .output()
            .expect("run stud");
        let text = all_text(&out);
        assert!(!text.contains("result: alive"), "{name} ran: {text}");
        assert!(
            text.contains(&format!("tool `{name}` of extension `impostor` refused")),
            "{text}"
        );
    }
}

/// `stud ext dev` refuses a folder whose manifest takes a bundled id, and
/// a link to one written into dev.toml by hand is refused at discovery.
#[test]
fn a_dev_link_cannot_take_a_bundled_id() {
    let env = StudEnv::new();
    let work = tempfile::tempdir().expect("tempdir");
    let folder = fixture_as("auto-ui", &work.path().join("console"), "console");
    let out = env.run(&["ext", "dev", folder.to_str().expect("utf-8")], "");
    assert!(!out.status.success(), "linked: {}", all_text(&out));
    assert!(
        stderr(&out).contains("console/extension.toml") && stderr(&out).contains("reserved"),
        "{}",
        stderr(&out)
    );

    let canonical = folder.canonicalize().expect("canonical");
    std::fs::write(
        env.home.path().join("dev.toml"),
        format!("folders = [{:?}]\n", canonical.display().to_string()),
    )
    .expect("write dev.toml");
    let out = env
        .command(&["ext", "list", "--json"])
        .output()
        .expect("run stud");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let console = v["extensions"]
        .as_array()
        .expect("list")
        .iter()
        .find(|e| e["id"] == "console")
        .expect("console listed")
        .clone();
    assert_eq!(console["scope"], "bundled", "{console}");
    let problems = v["problems"].to_string();
    assert!(
        problems.contains("console/extension.toml") && problems.contains("reserved"),
        "{problems}"
    );
}

/// A command linked with `stud ext dev` is pinned when the session
/// starts; its bytes swapped afterwards (no `/reload`, which re-reads and
/// re-pins) are refused at its first use instead of run.
#[test]
fn dev_bytes_swapped_after_the_session_pinned_them_are_refused() {
    let env = StudEnv::new();
    env.script(json!([{"text": "READY"}, {"text": "READY"}]), json!({}));
    let work = tempfile::tempdir().expect("tempdir");
    let folder = fixture_as("greeter", &work.path().join("greeter"), "greeter");
    env.ok(&["ext", "dev", folder.to_str().expect("utf-8")]);

    let mut child = env
        .command(&[])
        .stdin(Stdio::piped())
        .spawn()
        .expect("start stud");
    let mut stdin = child.stdin.take().expect("stdin");
    let screen = Screen::of(&mut child);
    stdin.write_all(b"hi\n").expect("type");
    assert!(screen.wait_for(&["READY"]), "{}", screen.text());

    let wasm = folder.join("fixture_greeter.wasm");
    let mut bytes = std::fs::read(&wasm).expect("read component");
    bytes.extend(common::custom_section("swapped", b"after the pin"));
    std::fs::write(&wasm, bytes).expect("swap component");

    stdin.write_all(b"/greet\n").expect("type");
    assert!(
        screen.wait_for(&["hello from /greet", "changed since"]),
        "{}",
        screen.text()
    );
    drop(stdin);
    let _ = child.wait();
    let shown = screen.text();
    assert!(
        !shown.contains("hello from /greet"),
        "the swapped bytes ran: {shown}"
    );
    assert!(
        shown.contains("`greeter`") && shown.contains("/reload"),
        "{shown}"
    );
}

/// The user's own allowlist entry `mytool:*` approves the user's global
/// `mytool`; once a trusted project brings a `mytool` of its own (the
/// review says it replaces the user's), the same entry no longer approves
/// it: the user's entries reach only the tools the user installed. An
/// entry the project adds (accepted in its review) or one typed for the
/// run does.
#[test]
fn the_users_allowlist_does_not_approve_a_project_tool_that_took_the_id() {
    let env = StudEnv::new();
    global_extension(&env, "hostile", "mytool");
    let script = |env: &StudEnv, extra: Value| {
        let mut settings = json!({
            "securityMode": {"mode": "allowlist", "allowlist": ["mytool:*"]},
            "tools": {"mytool": {"name": "mytool"}}
        });
        common::merge(&mut settings, extra);
        env.script(
            json!([
                {"text": "", "tool_calls": [call("mytool", json!({"mode": "ok"}))]},
                {"text": "result: {{tool_results}}"}
            ]),
            settings,
        );
    };
    script(&env, json!({}));
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-p", "--output-format", "json"];
        args.extend_from_slice(extra);
        args.push("go");
        env.command(&args).output().expect("run stud")
    };
    let out = run(&[]);
    assert!(
        all_text(&out).contains("result: alive"),
        "{}",
        all_text(&out)
    );

    project_extension(&env, "hostile", "mytool");
    let shown = env.ok(&["trust", "grant"]);
    assert!(shown.contains("replaces your global"), "{shown}");
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(3), "{}", all_text(&out));
    assert!(
        !all_text(&out).contains("result: alive"),
        "{}",
        all_text(&out)
    );

    // Typed for this run, the entry reaches it.
    let out = run(&["--allow", "mytool:*"]);
    assert!(
        all_text(&out).contains("result: alive"),
        "{}",
        all_text(&out)
    );
}
