//! The `postgres` session store the way a team uses it: two `stud` homes
//! (two machines) on one real PostgreSQL server, a session started on one
//! and listed and resumed on the other, one writer per session across
//! machines, an unreachable database at start, a database restart and a
//! `kill -9` mid-session with nothing confirmed lost.

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::http::{Reply, TestServer};
use crate::common::pg::Pg;
use crate::common::screen::Screen;
use crate::common::{StudEnv, call, merge, signal};

/// Settings that keep this home's sessions in `url`, the password read
/// from a file in the home (a secret reference), the scripted provider on.
fn team_settings(env: &StudEnv, url: &str, extra: Value) -> Value {
    let pw = env.home.path().join("pgpass");
    std::fs::write(&pw, Pg::PASSWORD).expect("write the password file");
    let mut s = json!({
        "active": {"provider": "scripted", "sessionStore": "postgres"},
        "providers": {"scripted": {"script-file": "script.json"}},
        "sessionStores": {"postgres": {"url": url}},
        "secrets": {"postgres": {"PGPASSWORD": {"file": pw}}}
    });
    merge(&mut s, extra);
    env.settings(s.clone());
    s
}

fn script(project: &Path, turns: Value) {
    std::fs::write(
        project.join("script.json"),
        json!({"turns": turns}).to_string(),
    )
    .expect("write the script");
}

/// `stud ARGS` with `env`'s home, run in `project`, as machine `machine`.
fn on(env: &StudEnv, project: &Path, machine: &str, args: &[&str]) -> std::process::Output {
    env.command(args)
        .current_dir(project)
        .env("STUD_MACHINE", machine)
        .output()
        .expect("run stud")
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "stud failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn list(env: &StudEnv, project: &Path, all: bool) -> Vec<Value> {
    let mut args = vec!["session", "list", "--json"];
    if all {
        args.push("--all");
    }
    let text = ok(&on(env, project, "m", &args));
    serde_json::from_str::<Vec<Value>>(&text).expect("session list --json")
}

/// The id of the newest session listed for `project`, once there is one
/// (a live session's manifest is written just after its turn ends).
fn first_listed(env: &StudEnv, project: &Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let listed = list(env, project, false);
        if let Some(id) = listed.first().and_then(|s| s["session_id"].as_str()) {
            return id.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no session listed 20 s after its turn ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The texts of a session's messages, in order (`session show --json`:
/// the manifest, then one record per line).
fn messages(env: &StudEnv, project: &Path, id: &str) -> Vec<String> {
    let text = ok(&on(env, project, "m", &["session", "show", "--json", id]));
    serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .skip(1)
        .map(|r| r.expect("a JSON record"))
        .filter(|r| r["type"] == "message")
        .map(|r| {
            let m = &r["message"];
            let text: Vec<&str> = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect();
            format!("{}: {}", m["role"].as_str().unwrap_or("?"), text.join(""))
        })
        .collect()
}

/// An interactive session with stdin held open.
struct Live {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    screen: Screen,
}

impl Live {
    fn start(env: &StudEnv, project: &Path, args: &[&str]) -> Live {
        let mut child = env
            .command(args)
            .current_dir(project)
            .stdin(Stdio::piped())
            .spawn()
            .expect("start stud");
        let stdin = child.stdin.take();
        let screen = Screen::of(&mut child);
        Live {
            child,
            stdin,
            screen,
        }
    }

    fn text(&self) -> String {
        self.screen.text()
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("type a line");
    }

    fn wait_for(&self, needle: &str, times: usize) {
        assert!(
            self.screen.wait_for_times(needle, times),
            "`{needle}` x{times} never printed:\n{}",
            self.text()
        );
    }

    fn finish(mut self) -> String {
        self.stdin.take();
        let status = self.child.wait().expect("wait for stud");
        // The readers stop at the pipes' end.
        std::thread::sleep(Duration::from_millis(100));
        let text = self.text();
        assert!(status.success(), "stud failed:\n{text}");
        text
    }
}

#[test]
fn two_machines_share_sessions_one_starts_the_other_lists_and_resumes() {
    let pg = Pg::shared();
    let db = pg.create_db("two_homes");
    let url = pg.url(&db);
    let laptop = StudEnv::new();
    let runner = StudEnv::new();
    team_settings(&laptop, &url, json!({}));
    team_settings(&runner, &url, json!({}));
    let project = laptop.project.path();

    script(
        project,
        json!([
            {"text": "", "tool_calls": [call("list", json!({"path": "."}))]},
            {"text": "first answer to {{last_user}}"}
        ]),
    );
    let out = ok(&on(
        &laptop,
        project,
        "ci-runner",
        &["run", "-p", "hello from CI"],
    ));
    assert!(out.contains("first answer to hello from CI"), "{out}");
    // Nothing went to the files of the home.
    let kept_here = std::fs::read_dir(laptop.home.path().join("data/filesystem"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(kept_here, 0, "a session was kept on this machine");

    // The other machine, elsewhere: none here, one in the team's store.
    let here = list(&runner, runner.project.path(), false);
    assert!(here.is_empty(), "{here:?}");
    let text = ok(&on(
        &runner,
        runner.project.path(),
        "laptop",
        &["session", "list"],
    ));
    assert!(text.contains("--all` shows 1 elsewhere"), "{text}");
    let all = list(&runner, runner.project.path(), true);
    assert_eq!(all.len(), 1, "{all:?}");
    let id = all[0]["session_id"].as_str().expect("id").to_string();
    assert_eq!(all[0]["project_root"], project.display().to_string());

    // It resumes there, in the project's folder, by its id (`-c` takes
    // only the person's own sessions from a shared store). Extension
    // state is not taken up from a shared record: the scripted model
    // starts its script again.
    script(project, json!([{"text": "resumed: {{last_user}}"}]));
    let out = on(&runner, project, "laptop", &["run", "-p", "-c", "mine?"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "-c took another's session: {err}");
    assert!(err.contains("-c` takes only your own"), "{err}");
    assert!(err.contains(&id), "{err}");
    let out = ok(&on(
        &runner,
        project,
        "laptop",
        &["run", "-p", "--resume", &id, "and from the laptop"],
    ));
    assert!(out.contains("resumed: and from the laptop"), "{out}");
    let shown = messages(&laptop, project, &id);
    assert_eq!(
        shown.first().map(String::as_str),
        Some("user: hello from CI")
    );
    assert_eq!(
        shown[shown.len() - 3..],
        [
            "assistant: first answer to hello from CI",
            "user: and from the laptop",
            "assistant: resumed: and from the laptop",
        ]
    );
    // The row says who wrote it last, and where.
    let row = pg.psql(
        &db,
        &format!("SELECT machine, project_root FROM stud_sessions WHERE session_id = '{id}'"),
    );
    assert_eq!(row, format!("laptop|{}", project.display()));
    // And `stud audit` reads the authority stack's decisions from the
    // same database, on the other machine.
    let audit: Value = serde_json::from_str(&ok(&on(
        &runner,
        runner.project.path(),
        "laptop",
        &["audit", "--tool", "list", "--decision", "approve", "--json"],
    )))
    .expect("audit --json");
    let rows = audit.as_array().expect("rows");
    assert!(!rows.is_empty(), "{audit:#}");
    assert!(
        rows.iter().all(|r| r["session_id"] == id.as_str()),
        "{audit:#}"
    );
}

#[test]
fn a_session_open_on_one_machine_is_refused_on_another() {
    let pg = Pg::shared();
    let db = pg.create_db("one_writer");
    let url = pg.url(&db);
    let a = StudEnv::new();
    let b = StudEnv::new();
    team_settings(&a, &url, json!({}));
    team_settings(&b, &url, json!({}));
    let project = a.project.path();
    script(
        project,
        json!([
            {"text": "answer to {{last_user}}"},
            {"text": "answer to {{last_user}}"}
        ]),
    );
    let mut live = Live::start(&a, project, &[]);
    live.say("hold it");
    live.wait_for("answer to hold it", 1);
    // The manifest that lists the session is written while the person
    // reads the answer, so the answer can be on screen a moment before.
    let id = first_listed(&b, project);

    // Another home (so no shared lock file): only the database's lock stops it.
    let out = on(
        &b,
        project,
        "other",
        &["run", "-p", "--resume", &id, "intrude"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second writer was let in: {err}");
    assert!(err.contains("open in another stud process"), "{err}");
    assert!(err.contains(&id), "{err}");

    live.finish();
    let out = on(
        &b,
        project,
        "other",
        &["run", "-p", "--resume", &id, "now mine"],
    );
    ok(&out);
    assert_eq!(messages(&b, project, &id).len(), 4);
}

/// A database URL on a loopback port nothing listens on, and the port.
fn unreachable_database() -> (String, u16) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    (format!("postgres://stud@127.0.0.1:{port}/nowhere"), port)
}

#[test]
fn an_unreachable_database_stops_the_start_or_falls_back_as_configured() {
    let (url, port) = unreachable_database();
    let env = StudEnv::new();
    team_settings(&env, &url, json!({}));
    script(env.project.path(), json!([{"text": "kept anyway"}]));
    let out = env.run(&["run", "-p", "hi"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("session store `postgres`"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("active.sessionStoreFallback"), "{err}");

    // With a fallback the person chose, the session goes on, kept here.
    team_settings(
        &env,
        &url,
        json!({"active": {"sessionStoreFallback": "filesystem"}}),
    );
    let out = env.run(&["run", "-p", "hi"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("kept anyway"));
    assert!(err.contains("kept by `filesystem`"), "{err}");
    assert_eq!(
        std::fs::read_dir(env.home.path().join("data/filesystem"))
            .expect("the filesystem store's folder")
            .count(),
        1,
        "the session was kept on this machine"
    );

    // A password in the URL is refused by name, never used.
    team_settings(&env, "postgres://stud:hunter2@127.0.0.1:5432/x", json!({}));
    let out = env.run(&["run", "-p", "hi"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("sessionStores.postgres.url"), "{err}");
    assert!(err.contains("PGPASSWORD"), "{err}");
}

/// The store starts beside the rest of the start (docs/benchmarks.md),
/// yet one that does not start still comes first: no MCP server is
/// started (its command would leave a marker file), and the session is
/// neither locked nor written anywhere.
#[test]
fn an_unreachable_database_stops_the_start_before_any_server_starts_or_anything_is_written() {
    let (url, _) = unreachable_database();
    let env = StudEnv::new();
    let marker = env.project.path().join("spawned.txt");
    team_settings(
        &env,
        &url,
        json!({"mcpServers": {
            "marker": {"command": "sh", "args": ["-c", format!("touch {}; sleep 5", marker.display())]}
        }}),
    );
    env.ok(&["mcp", "trust", "marker"]);
    script(env.project.path(), json!([{"text": "never said"}]));
    let out = env.run(&["run", "-p", "hi"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("session store `postgres`"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("never said"));
    assert!(
        !marker.exists(),
        "the MCP server was started before the store's failure stopped the start"
    );
    let entries = |dir: &str| std::fs::read_dir(env.home.path().join(dir)).map_or(0, |d| d.count());
    assert_eq!(entries("locks"), 0, "a session was locked");
    assert_eq!(entries("data/filesystem"), 0, "a session was written");
}

#[test]
fn a_schema_newer_than_this_stud_is_refused() {
    let pg = Pg::shared();
    let db = pg.create_db("newer");
    let env = StudEnv::new();
    team_settings(&env, &pg.url(&db), json!({}));
    script(
        env.project.path(),
        json!([{"text": "one"}, {"text": "two"}]),
    );
    ok(&env.run(&["run", "-p", "first"], ""));
    pg.psql(&db, "UPDATE stud_schema SET version = 99");
    let out = env.run(&["run", "-p", "second"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("version 99, newer than this stud knows"),
        "{err}"
    );
}

#[test]
fn a_database_restart_mid_session_loses_nothing_confirmed() {
    let pg = Pg::start();
    pg.psql("postgres", "CREATE DATABASE restart");
    let env = StudEnv::new();
    team_settings(&env, &pg.url("restart"), json!({}));
    let project = env.project.path();
    script(
        project,
        json!([
            {"text": "answer one"},
            {"text": "answer two"},
            {"text": "answer three"}
        ]),
    );
    let mut live = Live::start(&env, project, &[]);
    live.say("one");
    live.wait_for("answer one", 1);
    pg.stop();
    live.say("two");
    live.wait_for("answer two", 1);
    // The session says its records are not stored yet, and why.
    live.wait_for("[not saved]", 1);
    let text = live.text();
    assert!(text.contains("held in memory"), "{text}");
    pg.start_again();
    live.say("three");
    live.wait_for("answer three", 1);
    live.wait_for("[saved]", 1);
    let text = live.finish();
    // Said once for the outage, not at every record.
    assert_eq!(text.matches("[not saved]").count(), 1, "{text}");

    let id = list(&env, project, false)[0]["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(
        messages(&env, project, &id),
        [
            "user: one",
            "assistant: answer one",
            "user: two",
            "assistant: answer two",
            "user: three",
            "assistant: answer three",
        ],
        "every message once, in order, after the restart"
    );
}

#[test]
fn a_kill_mid_turn_loses_no_confirmed_message() {
    let pg = Pg::shared();
    let db = pg.create_db("kill");
    let url = pg.url(&db);
    let env = StudEnv::new();
    team_settings(&env, &url, json!({}));
    let project = env.project.path();
    script(
        project,
        json!([
            {"text": "working", "tool_calls": [call("bash", json!({"command": "sleep 30"}))]}
        ]),
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
        .filter_map(|ev| ev["payload"]["index"].as_u64())
        .collect();
    signal(&child, "KILL");
    let _ = child.wait();
    assert_eq!(
        persisted,
        [0, 1],
        "user and assistant confirmed before the kill"
    );

    // Another machine finds both, and the session free to resume (the
    // killed process's lock went with its connection).
    let other = StudEnv::new();
    team_settings(&other, &url, json!({}));
    let id = list(&other, project, false)[0]["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    let shown = messages(&other, project, &id);
    assert_eq!(
        shown[..2],
        ["user: start", "assistant: working"],
        "{shown:?}"
    );
    script(project, json!([{"text": "after: {{last_user}}"}]));
    let out = ok(&on(
        &other,
        project,
        "m2",
        &["run", "-p", "--resume", &id, "again"],
    ));
    assert!(out.contains("after: again"), "{out}");
    assert_eq!(
        messages(&other, project, &id).last().map(String::as_str),
        Some("assistant: after: again")
    );
}

#[test]
fn tls_to_the_database_is_checked_against_the_roots_the_person_names() {
    let (pg, tls) = Pg::start_with_tls();
    pg.psql("postgres", "CREATE DATABASE secure");
    let env = StudEnv::new();
    let project = env.project.path();
    script(
        project,
        json!([{"text": "over TLS"}, {"text": "over TLS again"}]),
    );
    // The team's own certificate authority, named in the URL: the store
    // speaks TLS, the certificate checked against that CA only.
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        pg.url("secure"),
        tls.ca_pem.display()
    );
    team_settings(&env, &url, json!({}));
    let mut live = Live::start(&env, project, &[]);
    live.say("hello");
    live.wait_for("over TLS", 1);
    let ssl = pg.psql(
        "secure",
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'stud'",
    );
    assert_eq!(ssl, "t", "the store's connection is not TLS");
    live.finish();

    // Without the CA, the web's roots do not know the certificate: refused,
    // and the error says what to do.
    team_settings(
        &env,
        &format!("{}?sslmode=require", pg.url("secure")),
        json!({}),
    );
    let out = env.run(&["run", "-p", "again"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "an unknown certificate was taken: {err}"
    );
    assert!(err.contains("sslrootcert"), "{err}");

    // A server without TLS, when the URL requires it: refused.
    let plain = Pg::shared();
    let db = plain.create_db("no_tls");
    team_settings(
        &env,
        &format!("{}?sslmode=require", plain.url(&db)),
        json!({}),
    );
    let out = env.run(&["run", "-p", "again"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("does not speak TLS"), "{err}");
}

#[test]
fn a_profile_chooses_the_store_and_a_project_cannot_point_it_elsewhere() {
    let pg = Pg::shared();
    let db = pg.create_db("profiled");
    let decoy = pg.create_db("decoy");
    let env = StudEnv::new();
    let project = env.project.path();
    script(
        project,
        json!([{"text": "one"}, {"text": "two"}, {"text": "three"}]),
    );
    // The filesystem store by default; `--profile team` keeps sessions in
    // the team's database.
    team_settings(
        &env,
        &pg.url(&db),
        json!({"active": {"sessionStore": null}, "profiles": {"team": {"sessionStore": "postgres"}}}),
    );
    let sessions_in = |db: &str| pg.psql(db, "SELECT count(*) FROM stud_sessions");
    let kept_here = || {
        std::fs::read_dir(env.home.path().join("data/filesystem"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    ok(&env.run(&["run", "-p", "--profile", "team", "hi"], ""));
    assert_eq!(sessions_in(&db), "1");
    assert_eq!(kept_here(), 0);
    ok(&env.run(&["run", "-p", "hi"], ""));
    assert_eq!(kept_here(), 1, "the default store is the filesystem");

    // A trusted project names another database for the store: ignored,
    // with a warning; the person's database still gets the session.
    std::fs::create_dir_all(project.join(".stud")).expect("mkdir");
    env.ok(&["trust", "grant"]);
    std::fs::write(
        project.join(".stud/settings.json"),
        json!({"sessionStores": {"postgres": {"url": pg.url(&decoy)}}}).to_string(),
    )
    .expect("write project settings");
    let out = env.run(&["run", "-p", "--profile", "team", "again"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("sessionStores.postgres.url"), "{err}");
    assert_eq!(sessions_in(&db), "2");
    let decoy_tables = pg.psql(
        &decoy,
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'stud_sessions'",
    );
    assert_eq!(decoy_tables, "0", "the project's database was reached");
}

/// A teammate (or a compromised server) with write access to the shared
/// database rewrites a session's record: yolo, and a set that drops every
/// hook. Resuming it must not run a command the person's own mode would
/// stop.
#[test]
fn a_forged_record_in_the_shared_database_cannot_loosen_the_session() {
    let pg = Pg::shared();
    let db = pg.create_db("forged");
    let env = StudEnv::new();
    team_settings(&env, &pg.url(&db), json!({}));
    let project = env.project.path();
    script(project, json!([{"text": "hello"}]));
    ok(&env.run(&["run", "-p", "first"], ""));
    let id = list(&env, project, false)[0]["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    pg.psql(
        &db,
        &format!(
            "UPDATE stud_sessions SET manifest = jsonb_set(jsonb_set(manifest::jsonb,
               '{{security_mode}}', '\"yolo\"'), '{{extension_set}}', '{{\"mode\": \"yolo\", \"hooks\": []}}')::text
             WHERE session_id = '{id}'"
        ),
    );
    // Whatever place in its script the record claims, the model asks
    // for `bash` next.
    let pwn = json!({"text": "", "tool_calls": [call("bash", json!({"command": "echo pwned > pwned.txt"}))]});
    script(
        project,
        json!([pwn.clone(), pwn, {"text": "done"}, {"text": "done"}]),
    );
    let out = env.run(&["run", "-p", "--resume", &id, "go on"], "");
    assert!(
        !project.join("pwned.txt").exists(),
        "the forged record's yolo ran bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The person's input is written while the request goes out, and the
/// answer is read only once the store confirmed it. Run against a store
/// the test can hold up: a PostgreSQL transaction locks the records table,
/// so the first append waits on the database. The request must reach the
/// (loopback) model meanwhile, and nothing of the answer may be shown
/// before the lock goes and the input is confirmed.
#[test]
fn the_input_is_stored_while_the_request_goes_out_and_confirmed_before_the_answer() {
    let pg = Pg::shared();
    let db = pg.create_db("ahead");
    let url = pg.url(&db);
    let server = TestServer::start(vec![Reply::sse(
        &crate::common::recorded_stream("openai-text.sse"),
        5,
    )]);
    let env = StudEnv::new();
    team_settings(
        &env,
        &url,
        json!({
            "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
            "providers": {"openai-compatible": {"baseUrl": format!("{}/v1", server.url())}}
        }),
    );
    let project = env.project.path();
    // The schema is made at the store's first start.
    ok(&on(&env, project, "m", &["session", "list"]));
    let mut holder = pg.psql_session(&db);
    let mut sql = holder.stdin.take().expect("psql stdin");
    writeln!(
        sql,
        "BEGIN; LOCK TABLE stud_records IN SHARE MODE; SELECT 'held';"
    )
    .expect("write to psql");
    let mut held = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().expect("psql stdout")),
        &mut held,
    )
    .expect("read psql");
    assert_eq!(held.trim(), "held", "the lock is taken");

    let mut child = env
        .command(&["run", "-p", "--output-format", "stream-json", "hello there"])
        .env("OPENAI_API_KEY", "sk-test")
        .env("STUD_MACHINE", "m")
        .spawn()
        .expect("start stud");
    let stdout = child.stdout.take().expect("stdout");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line);
            }
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the request never went out while the input's write waited: {:?}",
            lines.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The answer arrived at once; give the session time to show it, were
    // it to read it before the input is stored.
    std::thread::sleep(Duration::from_millis(500));
    {
        let seen = lines.lock().unwrap();
        for event in ["message.persisted", "provider.tokens", "turn.end"] {
            assert!(
                !seen.iter().any(|l| l.contains(&format!("\"{event}\""))),
                "`{event}` before the store confirmed the input: {seen:#?}"
            );
        }
    }
    writeln!(sql, "COMMIT;").expect("release the lock");
    drop(sql);
    let _ = holder.wait();
    let status = child.wait().expect("wait for stud");
    reader.join().expect("reader");
    assert!(status.success(), "stud failed: {:?}", lines.lock().unwrap());
    let events: Vec<Value> = lines
        .lock()
        .unwrap()
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |name: &str| {
        events
            .iter()
            .position(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("no `{name}` in {events:#?}"))
    };
    let input_persisted = events
        .iter()
        .position(|e| e["event"] == "message.persisted" && e["payload"]["index"] == 0)
        .expect("the input confirmed");
    assert!(input_persisted < at("provider.tokens"), "{events:#?}");
    let last_persisted = events
        .iter()
        .rposition(|e| e["event"] == "message.persisted")
        .expect("persisted");
    assert!(last_persisted < at("turn.end"), "{events:#?}");
    let id = events[input_persisted]["payload"]["session_id"]
        .as_str()
        .expect("session id")
        .to_string();
    let texts = messages(&env, project, &id);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(texts[0], "user: hello there");
}
