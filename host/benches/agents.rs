//! Subagent benchmark (a bench binary; numbers are printed, not asserted):
//! the overhead of a `task` call, everything except the model: admitting
//! the call, building the child session (tools narrowed, authority,
//! budget, scoped bus), its turn's stages, hooks and persistence (its log
//! and manifest), the roll-up and the events. Measured as a `task` call
//! whose child makes one request to the scripted provider, minus that
//! same request straight to the provider.
//!
//! Run: `cargo bench -p stud --bench agents`.

use std::time::{Duration, Instant};

use serde_json::json;
use stud::kernel::{LaunchOptions, launch};
use stud::paths::StudHome;
use stud::runtime::domain::ToolCall;
use tokio_util::sync::CancellationToken;

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

async fn child_overhead(fsync: bool) {
    println!("-- session store fsync = {fsync}");
    let home = tempfile::tempdir().expect("tmp");
    let project = tempfile::tempdir().expect("tmp");
    let script = json!({
        "repeat": true,
        "chunk": 64,
        "turns": [{"text": "ok"}],
        "lanes": {"sub-agent of a coding assistant": {"repeat": true, "turns": [{"text": "ok"}]}}
    });
    std::fs::write(project.path().join("script.json"), script.to_string()).expect("script");
    let settings = json!({
        "providers": {"scripted": {"script-file": "script.json"}},
        "securityMode": {"mode": "yolo"},
        "sessionStores": {"filesystem": {"fsync": fsync}}
    });
    std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");
    let mut l = launch(LaunchOptions {
        yolo: true,
        ..LaunchOptions::headless(StudHome::at(home.path()), project.path().to_path_buf())
    })
    .await
    .expect("launch");
    let cancel = CancellationToken::new();
    let call = |i: usize| ToolCall {
        id: format!("tc-{i}"),
        name: "task".into(),
        arguments: json!({"agent": "general", "description": "bench", "prompt": "hello"})
            .to_string(),
    };
    for i in 0..50 {
        let r = l.session.call_tool(&call(i), &cancel).await.expect("task");
        assert!(!r.is_error, "{:?}", r.content);
    }
    let mut tasks = Vec::new();
    for i in 0..500 {
        let c = call(1000 + i);
        let t = Instant::now();
        let _ = l.session.call_tool(&c, &cancel).await;
        tasks.push(t.elapsed());
    }
    let mut provider = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        l.session.provider_round_trip("hello").await;
        provider.push(t.elapsed());
    }
    let (t50, p50) = (
        percentile(tasks.clone(), 0.5),
        percentile(provider.clone(), 0.5),
    );
    println!(
        "task call, child answers in one request: p50 {t50:?}, p90 {:?}",
        percentile(tasks, 0.9)
    );
    println!("provider alone (send + drain): p50 {p50:?}");
    println!(
        "child start overhead (p50 difference): {:?}",
        t50.saturating_sub(p50)
    );
    l.shutdown().await;
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    rt.block_on(async {
        child_overhead(false).await;
        child_overhead(true).await;
    });
}
