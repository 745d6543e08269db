//! `stud mcp serve` as another agent or an IDE meets it: the official MCP
//! TypeScript SDK's client starts it on stdio in a project, lists its
//! tools (with their schemas), calls `read` and `grep`, is refused a
//! protected path by stud's guard, and gets `approval-required` for
//! `bash` in the ask mode: the client's say-so approves nothing.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::StudEnv;
use serde_json::{Value, json};

/// Run the SDK client against `stud mcp serve ARGS` in `env`'s project,
/// making `calls`; its answers, one JSON value each.
fn client(env: &StudEnv, args: &[&str], calls: Value) -> Vec<Value> {
    let out = Command::new("node")
        .arg(common::npm::serve_client())
        .env("STUD_BIN", env!("CARGO_BIN_EXE_stud"))
        .env("STUD_HOME", env.home.path())
        .env("STUD_CACHE_DIR", common::shared_cache())
        .env("PROJECT", env.project.path())
        .env("SERVE_ARGS", json!(args).to_string())
        .env("CALLS", calls.to_string())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn text(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_mcp_client_borrows_the_tools_but_not_the_authority() {
    let env = StudEnv::new();
    env.file("notes.txt", "the notes say hello\n");
    env.file(".env", "SECRET=hunter2\n");
    let answers = client(
        &env,
        &[],
        json!([
            ["read", {"path": "notes.txt"}],
            ["grep", {"pattern": "hello"}],
            ["read", {"path": ".env"}],
            ["bash", {"command": "touch made-by-client"}]
        ]),
    );
    let tools = &answers[0]["tools"];
    let named = |n: &str| {
        tools
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("no {n} in {tools:#}"))
            .clone()
    };
    // Each tool with its schema, and whether it only reads.
    assert_eq!(named("read")["inputSchema"]["type"], "object");
    assert!(named("read")["inputSchema"]["properties"]["path"].is_object());
    assert_eq!(named("read")["annotations"]["readOnlyHint"], true);
    assert_eq!(named("bash")["annotations"]["readOnlyHint"], false);
    let read = &answers[1];
    assert_eq!(read["result"]["isError"], false, "{read}");
    assert!(text(read).contains("the notes say hello"), "{read}");
    let grep = &answers[2];
    assert!(text(grep).contains("notes.txt"), "{grep}");
    // protect-paths refuses `.env` whoever asks.
    let env_read = &answers[3];
    assert_eq!(env_read["result"]["isError"], true, "{env_read}");
    assert!(!text(env_read).contains("hunter2"), "{env_read}");
    assert!(text(env_read).contains("protected"), "{env_read}");
    // The ask mode wants a person for `bash`: refused, nothing ran.
    let bash = &answers[4];
    assert_eq!(bash["result"]["isError"], true, "{bash}");
    assert!(text(bash).starts_with("approval-required"), "{bash}");
    assert!(!env.project.path().join("made-by-client").exists());
    // The serving session is recorded like any other: its event log holds
    // the client's calls and the authority stack's decisions on them.
    // (The session's own log holds them too, in its replay trace.)
    let logs: Vec<String> = env
        .files_containing("mcp-client-")
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("log"))
        .filter(|text| !text.starts_with(r#"{"type":"#))
        .collect();
    assert!(!logs.is_empty(), "no event log of the client's calls");
    let log = &logs[0];
    assert!(log.contains("\"approval.decided\""), "{log}");
    assert!(log.contains("\"tool.succeeded\""), "{log}");
}

/// An allowlist entry the person gave on the command line approves what
/// it names, and nothing else.
#[test]
fn the_persons_allowlist_approves_what_it_names() {
    let env = StudEnv::new();
    let answers = client(
        &env,
        &["--mode", "allowlist", "--allow", "bash:touch *"],
        json!([
            ["bash", {"command": "touch made-by-client"}],
            ["bash", {"command": "rm -rf ."}]
        ]),
    );
    assert_eq!(answers[1]["result"]["isError"], false, "{}", answers[1]);
    assert!(env.project.path().join("made-by-client").exists());
    assert!(
        text(&answers[2]).starts_with("approval-required"),
        "{}",
        answers[2]
    );
}

/// stud itself as the client (its MCP client is rmcp's): a session whose
/// model calls `mcp__inner__read` reaches a second stud serving this
/// folder.
#[test]
fn another_stud_reaches_the_served_tools_through_rmcp() {
    let env = StudEnv::new();
    env.file("notes.txt", "the notes say hello\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [common::call("mcp__inner__read", json!({"path": "notes.txt"}))]},
            {"text": "inner said: {{tool_results}}"}
        ]),
        json!({}),
    );
    let inner_home = tempfile::tempdir().expect("home");
    common::share_cache_key(inner_home.path());
    let home = format!("STUD_HOME={}", inner_home.path().display());
    let cache = format!("STUD_CACHE_DIR={}", common::shared_cache().display());
    // After the script's settings: `mcp add` keeps what is there.
    env.ok(&[
        "mcp",
        "add",
        "inner",
        "--env",
        &home,
        "--env",
        &cache,
        "--",
        env!("CARGO_BIN_EXE_stud"),
        "mcp",
        "serve",
    ]);
    let out = env.run(
        &["run", "-p", "--yolo", "read it through the other stud"],
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("inner said:"), "{stdout}");
    assert!(stdout.contains("the notes say hello"), "{stdout}");
}

/// `--prompt-tool` adds `prompt`: a whole turn of stud's own model in the
/// serving session, its tools through stud's stack; the final text comes
/// back. In the ask mode a turn that needs an approval stops and says so.
#[test]
fn the_prompt_tool_runs_a_whole_turn() {
    let env = StudEnv::new();
    env.file("notes.txt", "the notes say hello\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [common::call("read", json!({"path": "notes.txt"}))]},
            {"text": "stud read: {{tool_results}}"},
            {"text": "", "tool_calls": [common::call("bash", json!({"command": "touch made-by-turn"}))]},
            {"text": "not reached"}
        ]),
        json!({}),
    );
    let answers = client(
        &env,
        &["--prompt-tool"],
        json!([
            ["prompt", {"prompt": "what do the notes say?"}],
            ["prompt", {"prompt": "make a file"}]
        ]),
    );
    let tools = answers[0]["tools"].to_string();
    assert!(tools.contains("\"name\":\"prompt\""), "{tools}");
    assert_eq!(answers[1]["result"]["isError"], false, "{}", answers[1]);
    assert!(text(&answers[1]).contains("stud read:"), "{}", answers[1]);
    assert!(
        text(&answers[1]).contains("the notes say hello"),
        "{}",
        answers[1]
    );
    assert!(
        text(&answers[2]).starts_with("approval-required"),
        "{}",
        answers[2]
    );
    assert!(!env.project.path().join("made-by-turn").exists());
}

/// `stud mcp serve --http` running in `env`'s project: the child, its URL
/// and the token it printed.
#[allow(clippy::zombie_processes, reason = "the caller waits for the child")]
fn serve_http(env: &StudEnv) -> (std::process::Child, String, String) {
    use std::io::BufRead as _;
    let mut child = env
        .command(&["mcp", "serve", "--http", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run stud mcp serve --http");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped"));
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stud mcp serve --http never listened:\n{said}");
        }
        said.push_str(&line);
        if let Some(rest) = line.split("listening on ").nth(1) {
            let url = rest.split(';').next().unwrap().trim().to_string();
            let token = rest
                .split("Bearer ")
                .nth(1)
                .expect("a printed token")
                .trim()
                .trim_end_matches('`')
                .to_string();
            // Keep reading, so stud never blocks on a full pipe.
            std::thread::spawn(move || {
                let mut sink = String::new();
                while stderr.read_line(&mut sink).unwrap_or(0) > 0 {
                    sink.clear();
                }
            });
            return (child, url, token);
        }
    }
}

/// One raw POST of `initialize` to `url` with these extra header lines:
/// the status.
fn post_status(url: &str, headers: &str) -> u16 {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").expect("http");
    let (host, path) = rest.split_at(rest.find('/').expect("a path"));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).expect("a status line");
    String::from_utf8_lossy(&head[9..12]).parse().unwrap_or(0)
}

/// The same server over streamable HTTP on loopback: nothing without the
/// token, nothing for a foreign `Host` (DNS rebinding) or a web page's
/// `Origin`; with the token, the SDK's client and stud's own (rmcp) get
/// the tools under the same authority stack as on stdio.
#[test]
fn streamable_http_serving_wants_the_token_and_keeps_the_authority() {
    let env = StudEnv::new();
    env.file("notes.txt", "the notes say hello\n");
    env.file(".env", "SECRET=hunter2\n");
    let (mut server, url, token) = serve_http(&env);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert_eq!(token.len(), 64, "{token}");
    let host = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap();
    let bearer = format!("Authorization: Bearer {token}\r\n");
    assert_eq!(post_status(&url, &format!("Host: {host}\r\n")), 401);
    assert_eq!(
        post_status(
            &url,
            &format!(
                "Host: {host}\r\nAuthorization: Bearer {}\r\n",
                "0".repeat(64)
            )
        ),
        401
    );
    assert_eq!(
        post_status(&url, &format!("Host: evil.example:80\r\n{bearer}")),
        403
    );
    assert_eq!(
        post_status(
            &url,
            &format!("Host: {host}\r\nOrigin: http://evil.example\r\n{bearer}")
        ),
        403
    );

    let out = Command::new("node")
        .arg(common::npm::serve_client())
        .env("SERVE_URL", &url)
        .env("SERVE_TOKEN", &token)
        .env(
            "CALLS",
            json!([
                ["read", {"path": "notes.txt"}],
                ["read", {"path": ".env"}],
                ["bash", {"command": "touch made-by-client"}]
            ])
            .to_string(),
        )
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(
        text(&answers[1]).contains("the notes say hello"),
        "{stdout}"
    );
    assert!(text(&answers[2]).contains("protected"), "{stdout}");
    assert!(!text(&answers[2]).contains("hunter2"), "{stdout}");
    assert!(
        text(&answers[3]).starts_with("approval-required"),
        "{stdout}"
    );
    assert!(!env.project.path().join("made-by-client").exists());

    // stud's own client (rmcp) from another home, with the token as a
    // header.
    let other = StudEnv::new();
    other.script(
        json!([
            {"text": "", "tool_calls": [common::call("mcp__inner__read", json!({"path": "notes.txt"}))]},
            {"text": "inner said: {{tool_results}}"}
        ]),
        json!({}),
    );
    other.ok(&[
        "mcp",
        "add",
        "inner",
        "--url",
        &url,
        "--header",
        &format!("Authorization=Bearer {token}"),
    ]);
    let out = other.run(&["run", "-p", "--yolo", "read it over http"], "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("the notes say hello"),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // SIGTERM ends it cleanly; the session was recorded.
    #[cfg(unix)]
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let status = server.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(!env.files_containing("mcp-client-").is_empty());
}

/// Serving beyond loopback is refused, naming the address.
#[test]
fn http_serving_stays_on_loopback() {
    let env = StudEnv::new();
    let out = env
        .command(&["mcp", "serve", "--http", "0.0.0.0:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run stud");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("loopback") && said.contains("0.0.0.0"),
        "{said}"
    );
}

/// Served over HTTP from a terminal, a call that needs a person is asked
/// on that terminal: refused when the person says no, run once when they
/// say yes; the client's say-so still approves nothing.
#[test]
fn over_http_the_persons_terminal_answers_approvals() {
    use common::pty::Term;
    let env = StudEnv::new();
    let mut t = Term::spawn(&env, &["mcp", "serve", "--http", "0"], 200, 40);
    let screen = t.wait_for("Bearer ", Duration::from_secs(60));
    let line = screen
        .lines()
        .find(|l| l.contains("listening on"))
        .expect("the listening line")
        .to_string();
    let url = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .expect("a URL")
        .trim()
        .to_string();
    let token = line
        .split("Bearer ")
        .nth(1)
        .expect("a token")
        .trim()
        .trim_end_matches('`')
        .to_string();
    let call = |command: &str| {
        let (url, token) = (url.clone(), token.clone());
        let calls = json!([["bash", {"command": command}]]).to_string();
        std::thread::spawn(move || {
            Command::new("node")
                .arg(common::npm::serve_client())
                .env("SERVE_URL", url)
                .env("SERVE_TOKEN", token)
                .env("CALLS", calls)
                .output()
                .expect("run node")
        })
    };
    // A command carrying a terminal escape (setting the window title) is
    // refused before anyone is asked, and nothing of it reaches stud's
    // terminal.
    let out = call("touch escaped-file \u{1b}]0;pwned\u{7}")
        .join()
        .expect("the client");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("\"isError\":true"), "{said}");
    assert!(!env.project.path().join("escaped-file").exists());
    assert!(
        !t.raw().windows(4).any(|w| w == b"\x1b]0;"),
        "the client's escape reached the terminal"
    );

    let refused = call("touch refused-file");
    t.wait_for("touch refused-file", Duration::from_secs(60));
    t.wait_for("refuse [N]", Duration::from_secs(10));
    t.line("n");
    let out = refused.join().expect("the client");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("\"isError\":true"), "{said}");
    assert!(!env.project.path().join("refused-file").exists());

    let allowed = call("touch allowed-file");
    t.wait_for("touch allowed-file", Duration::from_secs(60));
    t.line("y");
    let out = allowed.join().expect("the client");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("\"isError\":false"),
        "{said}\n{}",
        t.contents()
    );
    assert!(env.project.path().join("allowed-file").exists());
    t.signal(libc::SIGTERM);
    assert!(t.wait_exit(Duration::from_secs(30)).is_some());
}
