//! Replay benchmark (a bench binary; numbers are printed, not asserted):
//! a 100-turn session (each turn: a `read` call, then an answer; 200
//! requests) is recorded in-process, then `stud session replay ID --json`
//! is run as a user runs it, and timed from outside (process start to
//! exit) and inside (the report's `ms`: store read to the last turn). Also
//! printed: what recording costs a turn, and the trace's share of the
//! session's log.
//!
//! Run: `cargo bench -p stud --bench replay`.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stud::kernel::{LaunchOptions, TurnStatus, launch};
use stud::paths::StudHome;
use tokio_util::sync::CancellationToken;

const TURNS: usize = 100;

fn stud(home: &std::path::Path, project: &std::path::Path, args: &[&str]) -> (Duration, String) {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_stud"))
        .args(args)
        .env("STUD_HOME", home)
        .current_dir(project)
        .output()
        .expect("run stud");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "stud {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn main() {
    let home = tempfile::tempdir().expect("tmp");
    let project = tempfile::tempdir().expect("tmp");
    std::fs::write(project.path().join("notes.txt"), "some notes\n".repeat(40)).expect("notes");
    let script = json!({"repeat": true, "turns": [
        {"text": "", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "Read them: they are notes, forty lines of them."}
    ]});
    std::fs::write(project.path().join("script.json"), script.to_string()).expect("script");
    let settings = json!({
        "active": {"provider": "scripted"},
        "providers": {"scripted": {"script-file": "script.json"}},
        "securityMode": {"mode": "yolo"},
        "sessionStores": {"filesystem": {"fsync": false}}
    });
    std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (id, record) = rt.block_on(async {
        let mut l = launch(LaunchOptions {
            yolo: true,
            ..LaunchOptions::headless(StudHome::at(home.path()), project.path().to_path_buf())
        })
        .await
        .expect("launch");
        let cancel = CancellationToken::new();
        let t = Instant::now();
        for i in 0..TURNS {
            let out = l
                .session
                .run_workflow(&format!("turn {i}: what is in the notes?"), &cancel)
                .await;
            assert_eq!(out.status, TurnStatus::Completed);
        }
        let took = t.elapsed();
        let id = l.session.id.clone();
        l.shutdown().await;
        (id, took)
    });
    println!(
        "recorded {TURNS} turns (200 requests, 100 read calls) in {record:?}: {:?} a turn",
        record / TURNS as u32
    );

    let (_, shown) = stud(
        home.path(),
        project.path(),
        &["session", "show", &id, "--json"],
    );
    let (mut trace, mut all) = (0usize, 0usize);
    for line in shown.lines().filter(|l| l.starts_with("{\"type\"")) {
        all += line.len();
        if line.starts_with("{\"type\":\"trace\"") {
            trace += line.len();
        }
    }
    println!(
        "session log: {all} bytes, of which trace records {trace} bytes ({:.0}%)",
        100.0 * trace as f64 / all.max(1) as f64
    );

    // A warm-up fills the compile cache.
    stud(home.path(), project.path(), &["session", "replay", &id]);
    let mut outside = Vec::new();
    let mut inside = Vec::new();
    for _ in 0..7 {
        let (took, out) = stud(
            home.path(),
            project.path(),
            &["session", "replay", &id, "--json"],
        );
        let report: Value = serde_json::from_str(&out).expect("report");
        assert_eq!(report["divergences"], json!([]), "{report:#}");
        assert_eq!(report["turns"], TURNS as u64);
        assert_eq!(report["requests"], 2 * TURNS as u64);
        outside.push(took);
        inside.push(Duration::from_millis(report["ms"].as_u64().unwrap_or(0)));
    }
    outside.sort();
    inside.sort();
    println!(
        "replay of {TURNS} turns, no divergence, every request byte-identical: median {:?} from outside (process start to exit), {:?} inside (min {:?}, max {:?})",
        outside[outside.len() / 2],
        inside[inside.len() / 2],
        outside[0],
        outside[outside.len() - 1]
    );
}
