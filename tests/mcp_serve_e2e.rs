//! `stud mcp serve` as another agent or an IDE meets it: the official MCP
//! TypeScript SDK's client starts it on stdio in a project, lists its
//! tools (with their schemas), calls `read` and `grep`, is refused a
//! protected path by stud's guard, and gets `approval-required` for
//! `bash` in the ask mode: the client's say-so approves nothing.

use crate::common;

use std::process::Command;

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
    let logs = env.files_containing("mcp-client-");
    assert!(!logs.is_empty(), "no log of the client's calls");
    let log = std::fs::read_to_string(&logs[0]).expect("log");
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
