//! Workflow and cancellation benchmarks (a bench binary; numbers are
//! printed, not asserted):
//! - kernel cost of one stage execution beyond the model (seven phases,
//!   their events, the position written to the session log);
//! - a parallel group of 8 siblings against 8 single stages one after
//!   another (calls into one provider instance take turns either way);
//! - Ctrl-C to a turn whose tool computes in a loop: cancel to `cancelled`.
//!
//! Run: `cargo bench -p stud --bench workflow`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stud::kernel::{LaunchOptions, Launched, TurnStatus, launch};
use stud::paths::StudHome;
use tokio_util::sync::CancellationToken;

struct Dirs {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

/// Copy a test fixture component into `home`'s extensions.
fn install_fixture(home: &Path, name: &str) {
    let src = Path::new(stud_fixtures::FIXTURES_DIR).join(name);
    let manifest = std::fs::read_to_string(src.join("extension.toml")).expect("fixture manifest");
    let component = manifest
        .lines()
        .find_map(|l| l.strip_prefix("component = "))
        .expect("component line")
        .trim_matches('"')
        .to_string();
    let dest = home.join("extensions").join(name);
    std::fs::create_dir_all(&dest).expect("mkdir");
    std::fs::write(dest.join("extension.toml"), manifest).expect("manifest");
    std::fs::copy(
        Path::new(stud_fixtures::WASM_OUT).join(&component),
        dest.join(component),
    )
    .expect("component");
}

fn dirs(script: Value, sm: Value, fixture: &str) -> Dirs {
    let d = Dirs {
        home: tempfile::tempdir().expect("tmp"),
        project: tempfile::tempdir().expect("tmp"),
    };
    install_fixture(d.home.path(), fixture);
    std::fs::write(d.project.path().join("script.json"), script.to_string()).expect("script");
    let settings = json!({
        "providers": {"scripted": {"script-file": "script.json"}},
        "securityMode": {"mode": "yolo"},
        "sessionStores": {"filesystem": {"fsync": false}},
        "stateMachines": {"workflow": sm}
    });
    std::fs::write(d.home.path().join("settings.json"), settings.to_string()).expect("settings");
    d
}

async fn start(d: &Dirs, sm: Option<&str>) -> Launched {
    launch(LaunchOptions {
        yolo: true,
        state_machine: sm.map(str::to_string),
        ..LaunchOptions::headless(StudHome::at(d.home.path()), d.project.path().to_path_buf())
    })
    .await
    .expect("launch")
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn done_turn() -> Value {
    json!({"text": "", "tool_calls": [{"name": "done", "arguments": {}}]})
}

/// One stage per workflow run: a request answered by the completion call.
async fn stage_execution() -> Duration {
    let d = dirs(
        json!({"repeat": true, "turns": [done_turn()]}),
        json!({"entry": "a", "stages": [{"id": "a", "allowedTools": []}]}),
        "workflow",
    );
    let mut l = start(&d, Some("workflow")).await;
    let cancel = CancellationToken::new();
    let mut runs = Vec::new();
    for i in 0..550 {
        let t = Instant::now();
        let out = l.session.run_workflow("go", &cancel).await;
        assert_eq!(out.status, TurnStatus::Completed);
        if i >= 50 {
            runs.push(t.elapsed());
        }
    }
    let mut provider = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        l.session.provider_round_trip("go").await;
        provider.push(t.elapsed());
    }
    let (run, prov) = (p50(runs), p50(provider));
    println!("one-stage workflow run: p50 {run:?}; provider alone (send + drain): p50 {prov:?}");
    println!(
        "kernel cost per stage execution beyond the model (p50 difference): {:?}",
        run.saturating_sub(prov)
    );
    l.shutdown().await;
    run
}

/// A parallel group of 8 siblings (no join) against 8 sequential stages.
async fn fan_out() {
    let ids: Vec<String> = (1..=8).map(|i| format!("s{i}")).collect();
    let mut stages = vec![json!({"id": "plan", "allowedTools": []})];
    stages.extend(ids.iter().map(|id| json!({"id": id, "allowedTools": []})));
    let parallel = json!({
        "entry": "plan",
        "stages": stages,
        "next": {"plan": {"stages": ids, "parallel": true}}
    });
    let mut chain = serde_json::Map::new();
    chain.insert("plan".into(), json!({"stages": [ids[0]]}));
    for w in ids.windows(2) {
        chain.insert(w[0].clone(), json!({"stages": [w[1]]}));
    }
    let sequential = json!({"entry": "plan", "stages": stages, "next": chain});
    let mut results = Vec::new();
    for (label, sm) in [("parallel", parallel), ("sequential", sequential)] {
        let d = dirs(
            json!({"repeat": true, "turns": [done_turn()]}),
            sm,
            "workflow",
        );
        let mut l = start(&d, Some("workflow")).await;
        let cancel = CancellationToken::new();
        let mut runs = Vec::new();
        for i in 0..110 {
            let t = Instant::now();
            let out = l.session.run_workflow("go", &cancel).await;
            assert_eq!(out.status, TurnStatus::Completed, "{label}: {out:?}");
            if i >= 10 {
                runs.push(t.elapsed());
            }
        }
        let run = p50(runs);
        println!("plan + 8 stages, {label}: p50 {run:?}");
        results.push(run);
        l.shutdown().await;
    }
    println!(
        "fan-out of 8 against the same 8 stages in sequence: {:+.3} ms",
        (results[0].as_secs_f64() - results[1].as_secs_f64()) * 1000.0
    );
}

/// Ctrl-C (the turn's token) while a tool spins in a loop.
async fn cancel_latency() {
    let d = dirs(
        // Every turn's first request calls the looping tool; the turn is
        // cancelled before a second one.
        json!({"repeat": true, "turns": [
            {"text": "", "tool_calls": [{"name": "hostile", "arguments": {"mode": "loop"}}]}
        ]}),
        json!({"entry": "a", "stages": [{"id": "a"}]}),
        "hostile",
    );
    let mut l = start(&d, None).await;
    let mut latencies = Vec::new();
    for _ in 0..20 {
        l.session.clear_history();
        let cancel = CancellationToken::new();
        let sub = l.bus.subscribe("bench", 4096);
        let trigger = cancel.clone();
        let watcher = tokio::spawn(async move {
            while let Some(ev) = sub.next().await {
                if ev.name == "tool.started" {
                    // Let the guest get into its loop.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let at = Instant::now();
                    trigger.cancel();
                    return Some(at);
                }
            }
            None
        });
        let out = l.session.run_turn("go", &cancel).await;
        let ended = Instant::now();
        let at = watcher.await.expect("watcher").expect("tool started");
        assert_eq!(out.status, TurnStatus::Cancelled);
        latencies.push(ended - at);
    }
    latencies.sort();
    println!(
        "Ctrl-C to a turn ended as cancelled (tool in a busy loop): p50 {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    l.shutdown().await;
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    // `STUD_BENCH_ONLY=stage` (or `fan-out`, `cancel`) runs one part,
    // for profiling.
    let only = std::env::var("STUD_BENCH_ONLY").ok();
    let run = |part: &str| only.as_deref().is_none_or(|o| o == part);
    rt.block_on(async {
        if run("stage") {
            stage_execution().await;
        }
        if run("fan-out") {
            fan_out().await;
        }
        if run("cancel") {
            cancel_latency().await;
        }
    });
}
