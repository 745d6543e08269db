//! MCP benchmarks (a bench binary; numbers printed, not asserted), against
//! `@modelcontextprotocol/server-everything` from the npm registry (the
//! pinned copy the tests install into `target/tmp/npm`):
//! - a tool call (`echo`) through stud (lookup, schema check, authority
//!   stack, hooks, result parts and limits) vs the same call straight
//!   through the `rmcp` client session on the same kind of connection;
//! - a `read` call through `stud mcp serve` (stud's rmcp client to a
//!   second stud process on stdio) vs the same call in-process;
//! - session start with three stdio servers: headless (waits for them, a
//!   script expects their tools in its first request) and interactive
//!   (does not wait: tools join when each server is up), against a start
//!   with none, and when the servers' tools are there.
//!
//! Run: `cargo bench -p stud --bench mcp` (after `cargo test`, or
//! `bash .ci/run`, has installed the servers).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use stud::extensions::ProjectScope;
use stud::kernel::{LaunchOptions, launch};
use stud::mcp::{McpServers, McpTrust, client};
use stud::paths::StudHome;
use stud::runtime::domain::ToolCall;
use tokio_util::sync::CancellationToken;

const CALLS: usize = 300;
const STARTS: usize = 5;

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn server_bin() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("npm/node_modules/.bin/mcp-server-everything");
    bin.exists().then_some(bin)
}

/// A home whose settings name `servers` copies of the server (trusted),
/// and allow their tools.
fn home_with(servers: usize, bin: &Path, project: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tmp");
    let mut entries = serde_json::Map::new();
    for i in 0..servers {
        entries.insert(format!("s{i}"), json!({"command": bin, "args": ["stdio"]}));
    }
    let settings = json!({
        "securityMode": {"mode": "allowlist", "allowlist": ["mcp__*__*"]},
        "mcpServers": entries,
    });
    std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");
    let stud_home = StudHome::at(home.path());
    let trust = McpTrust::new(home.path());
    for s in McpServers::discover(&stud_home, &ProjectScope::None, project).servers {
        trust.grant(&s).expect("trust");
    }
    home
}

fn options(home: &Path, project: &Path, headless: bool) -> LaunchOptions {
    let mut o = LaunchOptions::headless(StudHome::at(home), project.to_path_buf());
    o.headless = headless;
    o
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(bin) = server_bin() else {
        println!(
            "mcp: server-everything is not installed; run `cargo test --test e2e mcp_e2e::` (it installs the pinned servers) first"
        );
        return;
    };
    let project = tempfile::tempdir().expect("tmp");
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    rt.block_on(async {
        // Tool call overhead.
        let home = home_with(1, &bin, project.path());
        let mut l = launch(options(home.path(), project.path(), true))
            .await
            .expect("launch");
        let call = ToolCall {
            id: "c".into(),
            name: "mcp__s0__echo".into(),
            arguments: json!({"message": "hi"}).to_string(),
        };
        let cancel = CancellationToken::new();
        let server = McpServers::discover(&StudHome::at(home.path()), &ProjectScope::None, project.path())
            .servers
            .remove(0);
        let log = home.path().join("direct.log");
        let direct = client::connect(&server, project.path(), &log, client::START_TIMEOUT, &client::process_env, &client::ClientSide::default())
            .await
            .expect("direct connection");
        for _ in 0..50 {
            let r = l.session.call_tool(&call, &cancel).await.expect("call");
            assert!(!r.is_error, "{:?}", r.content);
            direct.call("echo", json!({"message": "hi"})).await.expect("direct");
        }
        let (mut via, mut raw) = (Vec::new(), Vec::new());
        for _ in 0..CALLS {
            let t = Instant::now();
            let _ = l.session.call_tool(&call, &cancel).await;
            via.push(t.elapsed());
            let t = Instant::now();
            let _ = direct.call("echo", json!({"message": "hi"})).await;
            raw.push(t.elapsed());
        }
        let (via, raw) = (p50(via), p50(raw));
        println!(
            "mcp echo call, p50 of {CALLS}: through stud {}, direct rmcp {}, overhead {}",
            ms(via),
            ms(raw),
            ms(via.saturating_sub(raw))
        );
        direct.close().await;
        l.shutdown().await;

        serve_overhead(project.path()).await;

        // Session start.
        let none = home_with(0, &bin, project.path());
        let three = home_with(3, &bin, project.path());
        let mut plain = Vec::new();
        let mut headless = Vec::new();
        let mut interactive = Vec::new();
        let mut tools_up = Vec::new();
        for _ in 0..STARTS {
            let t = Instant::now();
            let mut l = launch(options(none.path(), project.path(), true)).await.expect("launch");
            plain.push(t.elapsed());
            l.shutdown().await;

            let t = Instant::now();
            let mut l = launch(options(three.path(), project.path(), true)).await.expect("launch");
            headless.push(t.elapsed());
            l.shutdown().await;

            let t = Instant::now();
            let mut l = launch(options(three.path(), project.path(), false))
                .await
                .expect("launch");
            interactive.push(t.elapsed());
            let last = ToolCall {
                id: "c".into(),
                name: "mcp__s2__echo".into(),
                arguments: json!({"message": "up"}).to_string(),
            };
            loop {
                l.session.refresh_mcp_tools().await;
                let up = (0..3).all(|i| {
                    l.session
                        .mcp_tool_names()
                        .iter()
                        .any(|n| n == &format!("mcp__s{i}__echo"))
                });
                if up {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tools_up.push(t.elapsed());
            let r = l.session.call_tool(&last, &cancel).await.expect("call");
            assert!(!r.is_error);
            l.shutdown().await;
        }
        println!(
            "session start, p50 of {STARTS}: no servers {}; 3 stdio servers headless (waits) {}; interactive (does not wait) {}, their tools there after {}",
            ms(p50(plain)),
            ms(p50(headless)),
            ms(p50(interactive)),
            ms(p50(tools_up))
        );
    });
}

/// `read` through `stud mcp serve` against the same call made in-process
/// on a session of the same folder: what serving costs beyond the tool
/// (JSON-RPC on stdio both ways, rmcp on both sides, the hand-off to the
/// serving session).
async fn serve_overhead(project: &Path) {
    std::fs::write(project.join("notes.txt"), "the notes\n").expect("write");
    let home = tempfile::tempdir().expect("tmp");
    let settings = json!({"mcpServers": {"stud": {
        "command": env!("CARGO_BIN_EXE_stud"),
        "args": ["mcp", "serve", "--mode", "yolo"],
        "env": {"STUD_HOME": home.path()}
    }}});
    std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");
    let server = McpServers::discover(&StudHome::at(home.path()), &ProjectScope::None, project)
        .servers
        .remove(0);
    let log = home.path().join("serve.log");
    let served = client::connect(
        &server,
        project,
        &log,
        Duration::from_secs(60),
        &client::process_env,
        &client::ClientSide::default(),
    )
    .await
    .expect("stud mcp serve");
    let mut l = launch(options(home.path(), project, true))
        .await
        .expect("launch");
    let call = ToolCall {
        id: "r".into(),
        name: "read".into(),
        arguments: json!({"path": "notes.txt"}).to_string(),
    };
    let cancel = CancellationToken::new();
    for _ in 0..50 {
        l.session.call_tool(&call, &cancel).await.expect("call");
        served
            .call("read", json!({"path": "notes.txt"}))
            .await
            .expect("served");
    }
    let (mut inside, mut through) = (Vec::new(), Vec::new());
    for _ in 0..CALLS {
        let t = Instant::now();
        let _ = l.session.call_tool(&call, &cancel).await;
        inside.push(t.elapsed());
        let t = Instant::now();
        let _ = served.call("read", json!({"path": "notes.txt"})).await;
        through.push(t.elapsed());
    }
    let (inside, through) = (p50(inside), p50(through));
    println!(
        "read through `stud mcp serve`, p50 of {CALLS}: {}, in-process {}, serving overhead {}",
        ms(through),
        ms(inside),
        ms(through.saturating_sub(inside))
    );
    served.close().await;
    l.shutdown().await;
}
