//! Tool benchmarks (a bench binary; numbers printed, not asserted):
//! - a read-only tool call through the authority stack (lookup, schema,
//!   mode gate, guard and observer hooks) vs the bare component call;
//! - `grep` over a 10,000-file tree inside the component vs ripgrep (`rg`,
//!   if installed) on the same tree;
//! - the bash approval key of a 200-character pipeline (the shell parser
//!   natively, and the `approval-key` call into the component);
//! - `bash true` with the Landlock process sandbox on and off.
//!
//! Run: `cargo bench -p stud --bench tools` (`STUD_BENCH_ONLY=grep` for the
//! grep comparison alone, 20 runs).

use std::time::{Duration, Instant};

use serde_json::json;
use stud::kernel::{LaunchOptions, launch};
use stud::paths::StudHome;
use stud::runtime::domain::ToolCall;
use tokio_util::sync::CancellationToken;

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let home = tempfile::tempdir().expect("tmp");
    let project = tempfile::tempdir().expect("tmp");
    std::fs::write(project.path().join("small.txt"), "one line\n").expect("file");
    // 10,000 files: 100 folders x 100 files of 30 lines, a few matches.
    for d in 0..100 {
        let dir = project.path().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).expect("dir");
        for f in 0..100 {
            let mut text = String::new();
            for l in 0..30 {
                if (d * 100 + f) % 97 == 0 && l == 7 {
                    text.push_str("let needle_value = compute();\n");
                } else {
                    text.push_str(&format!(
                        "line {l} of file {f} in folder {d} with some ordinary text\n"
                    ));
                }
            }
            std::fs::write(dir.join(format!("f{f:03}.rs")), text).expect("file");
        }
    }
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    rt.block_on(async {
        let l = launch(LaunchOptions::headless(StudHome::at(home.path()), project.path().to_path_buf()))
        .await
        .expect("launch");
        if std::env::var("STUD_BENCH_ONLY").is_ok_and(|v| v == "grep") {
            grep_vs_ripgrep(&l.session, project.path(), 20).await;
            return;
        }
        let cancel = CancellationToken::new();
        let call = ToolCall { id: "c".into(), name: "read".into(), arguments: json!({"path": "small.txt"}).to_string() };
        let read = l.session.tool_extension("read").expect("read tool");
        for _ in 0..200 {
            let _ = l.session.call_tool(&call, &cancel).await;
            let _ = read.tool_invoke("c", &call.arguments).await;
        }
        let (mut full, mut bare) = (Vec::new(), Vec::new());
        for _ in 0..2000 {
            let t = Instant::now();
            let _ = l.session.call_tool(&call, &cancel).await.expect("call");
            full.push(t.elapsed());
            let t = Instant::now();
            let _ = read.tool_invoke("c", &call.arguments).await.expect("invoke");
            bare.push(t.elapsed());
        }
        let (f, b) = (p50(full), p50(bare));
        println!("read-only call through the authority stack: p50 {f:?}; bare component call {b:?}; stack overhead {:?}", f.saturating_sub(b));

        // The bash approval key of a 200-character pipeline: the parser
        // alone (native), and the whole `approval-key` call into the bash
        // component (what the authority stack pays per bash call).
        let pipeline = "git log --oneline -n 50 | grep -v 'Merge branch' | sed -e 's/^/  /' | sort -k2 | uniq -c | head -n 20 && cargo build --release --workspace --all-targets 2>&1 | tail -n 5 ; echo done > build.log ; ls target";
        let pipeline = &pipeline[..pipeline.len().min(200)];
        let mut native = Vec::new();
        for _ in 0..2000 {
            let t = Instant::now();
            std::hint::black_box(stud_sdk_shell::approval_key(std::hint::black_box(pipeline)));
            native.push(t.elapsed());
        }
        let bash = l.session.tool_extension("bash").expect("bash tool");
        let args = json!({"command": pipeline}).to_string();
        let mut component = Vec::new();
        for i in 0..1000 {
            let t = Instant::now();
            let _ = bash.tool_approval_key(&args).await.expect("key");
            if i >= 50 {
                component.push(t.elapsed());
            }
        }
        println!(
            "bash approval key of a {}-character pipeline: p50 {:?} parsing natively, {:?} through the bash component",
            pipeline.len(),
            p50(native),
            p50(component)
        );

        grep_vs_ripgrep(&l.session, project.path(), 9).await;
        let on = bash_true(&l.session).await;
        // The same with the sandbox off (global settings), in a new session.
        std::fs::write(home.path().join("settings.json"), json!({"runtime": {"processSandbox": {"mode": "off"}}}).to_string()).expect("settings");
        let l2 = launch(LaunchOptions::headless(StudHome::at(home.path()), project.path().to_path_buf())).await.expect("launch");
        let off = bash_true(&l2.session).await;
        let mut runs = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            let _ = tokio::process::Command::new("sh").args(["-c", "true"]).output().await;
            runs.push(t.elapsed());
        }
        let native = p50(runs);
        println!("bash `true`: p50 {on:?} with the process sandbox, {off:?} without; `sh -c true` spawned by the bench itself {native:?}");
    });
}

/// p50 of `grep` through the session (the full tool-call path) over the
/// bench's tree, and of ripgrep on the same tree when `rg` is installed.
async fn grep_vs_ripgrep(
    session: &stud::kernel::Session,
    project: &std::path::Path,
    repeat: usize,
) {
    use stud::runtime::domain::ResultPart;
    let cancel = CancellationToken::new();
    let grep = ToolCall {
        id: "g".into(),
        name: "grep".into(),
        arguments: json!({"pattern": "needle_value"}).to_string(),
    };
    let matched = |r: &stud::runtime::domain::ToolResult| {
        r.content
            .iter()
            .map(|p| match p {
                ResultPart::Text(t) => t.lines().filter(|l| l.contains("needle_value")).count(),
                _ => 0,
            })
            .sum::<usize>()
    };
    let rg_installed = std::process::Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let rg = || {
        std::process::Command::new("rg")
            .args(["-n", "needle_value", "."])
            .current_dir(project)
            .output()
            .expect("rg")
    };
    // Warm up (the first calls also wait for start-up's background work).
    let mut found = 0;
    for _ in 0..3 {
        found = matched(&session.call_tool(&grep, &cancel).await.expect("grep"));
    }
    if rg_installed {
        let lines = String::from_utf8_lossy(&rg().stdout).lines().count();
        assert_eq!(found, lines, "grep and ripgrep disagree on the matches");
    }
    // Interleaved, so the machine's noise falls on both alike.
    let (mut component, mut native) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        let t = Instant::now();
        let _ = session.call_tool(&grep, &cancel).await.expect("grep");
        component.push(t.elapsed());
        if rg_installed {
            let t = Instant::now();
            let _ = rg();
            native.push(t.elapsed());
        }
    }
    let component = p50(component);
    println!("grep over 10,000 files in the component ({found} matches): p50 {component:?}");
    if rg_installed {
        let native = p50(native);
        println!(
            "ripgrep on the same tree: p50 {native:?}; component / ripgrep = {:.1}x",
            component.as_secs_f64() / native.as_secs_f64()
        );
    } else {
        println!("ripgrep (rg) not installed: no comparison");
    }
}

/// p50 of running `true` through the bash component (no approval stack).
async fn bash_true(session: &stud::kernel::Session) -> Duration {
    let bash = session.tool_extension("bash").expect("bash tool");
    let args = json!({"command": "true"}).to_string();
    for _ in 0..20 {
        let _ = bash.tool_invoke("b", &args).await;
    }
    let mut runs = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let _ = bash.tool_invoke("b", &args).await.expect("bash");
        runs.push(t.elapsed());
    }
    p50(runs)
}
