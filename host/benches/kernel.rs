//! Kernel benchmarks (a bench binary; numbers are printed, not asserted):
//! - kernel overhead of a turn with the bundled hooks attached (14 hook
//!   registrations in 3 extensions), excluding provider time;
//! - token throughput provider -> bus, and provider -> bus -> UI.
//!
//! Run: `cargo bench -p stud --bench kernel` (`STUD_BENCH_ONLY=turn` or
//! `throughput` for one group, `STUD_BENCH_TURNS=N` for a longer turn run,
//! `STUD_BENCH_FSYNC=false` for the turn without syncs only,
//! `STUD_BENCH_DISABLE=jsonl,stage-counter` to leave extensions out).

use std::time::{Duration, Instant};

use serde_json::json;
use stud::kernel::{LaunchOptions, Launched, launch};
use stud::paths::StudHome;
use tokio_util::sync::CancellationToken;

struct Dirs {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

fn dirs(script: serde_json::Value) -> Dirs {
    dirs_with(script, true)
}

/// `fsync`: whether the session store syncs each append (the default).
fn dirs_with(script: serde_json::Value, fsync: bool) -> Dirs {
    let d = Dirs {
        home: tempfile::tempdir().expect("tmp"),
        project: tempfile::tempdir().expect("tmp"),
    };
    std::fs::write(d.project.path().join("script.json"), script.to_string()).expect("script");
    let settings = json!({
        "providers": {"scripted": {"script-file": "script.json"}},
        "securityMode": {"mode": "yolo"},
        "sessionStores": {"filesystem": {"fsync": fsync}}
    });
    std::fs::write(d.home.path().join("settings.json"), settings.to_string()).expect("settings");
    d
}

async fn start(d: &Dirs, render: bool) -> Launched {
    launch(LaunchOptions {
        yolo: true,
        render,
        // `STUD_BENCH_DISABLE=jsonl,stage-counter`: leave extensions out,
        // to see what each costs.
        set: stud::kernel::extension_set::SetChoice {
            disable: std::env::var("STUD_BENCH_DISABLE")
                .map(|d| {
                    d.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            ..Default::default()
        },
        ..LaunchOptions::headless(StudHome::at(d.home.path()), d.project.path().to_path_buf())
    })
    .await
    .expect("launch")
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

/// A turn's cost beyond the provider's. Every turn persists its messages
/// and the manifest: with `fsync` that is the disk's sync latency, so the
/// kernel's own share is the run without it.
async fn turn_overhead(fsync: bool) {
    println!("-- session store fsync = {fsync}");
    let d = dirs_with(
        json!({"repeat": true, "chunk": 64, "turns": [{"text": "ok"}]}),
        fsync,
    );
    let mut l = start(&d, false).await;
    let hooks: usize = l.session.hook_registrations();
    let cancel = CancellationToken::new();
    for _ in 0..50 {
        l.session.clear_history();
        l.session.run_turn("hello", &cancel).await;
    }
    let mut turns = Vec::new();
    // `STUD_BENCH_TURNS` lengthens the run, for a profiler.
    let count = std::env::var("STUD_BENCH_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(500);
    for _ in 0..count {
        // Each measured turn is the first of a conversation, so the number
        // does not grow with an ever longer history.
        l.session.clear_history();
        let t = Instant::now();
        l.session.run_turn("hello", &cancel).await;
        turns.push(t.elapsed());
    }
    // Provider time alone: the same request straight to the component.
    let mut provider = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        l.session.provider_round_trip("hello").await;
        provider.push(t.elapsed());
    }
    let (t50, p50) = (
        percentile(turns.clone(), 0.5),
        percentile(provider.clone(), 0.5),
    );
    println!(
        "turn with {hooks} hook registrations: p50 {:?}, p90 {:?}",
        t50,
        percentile(turns, 0.9)
    );
    println!("provider alone (send + drain): p50 {:?}", p50);
    println!(
        "kernel overhead per turn (p50 difference): {:?}",
        t50.saturating_sub(p50)
    );
    l.shutdown().await;
}

async fn throughput(render: bool) {
    const TOKENS: usize = 100_000;
    let text = "x".repeat(TOKENS);
    let d = dirs(json!({"chunk": 1, "turns": [{"text": "warm"}, {"text": text}]}));
    let mut l = start(&d, render).await;
    let cancel = CancellationToken::new();
    // A first turn links what the turn uses (the UI, the store, hooks):
    // extensions are compiled and linked at their first call, and this
    // bench's home starts with an empty compile cache.
    l.session.run_turn("warm", &cancel).await;
    let t = Instant::now();
    l.session.run_turn("go", &cancel).await;
    let turn = t.elapsed();
    l.shutdown().await;
    let all = t.elapsed();
    let label = if render {
        "provider -> bus -> console UI"
    } else {
        "provider -> bus"
    };
    println!(
        "{label}: {TOKENS} tokens, turn {:?} ({:.0} tokens/s through the loop), drained {:?} ({:.0} tokens/s end to end)",
        turn,
        TOKENS as f64 / turn.as_secs_f64(),
        all,
        TOKENS as f64 / all.as_secs_f64()
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    // `STUD_BENCH_ONLY=turn` or `=throughput` runs one group.
    let only = std::env::var("STUD_BENCH_ONLY").ok();
    let on = |group: &str| only.as_deref().is_none_or(|o| o == group);
    rt.block_on(async {
        if on("turn") {
            // `STUD_BENCH_FSYNC=false` or `=true` runs one of the two.
            let fsync = std::env::var("STUD_BENCH_FSYNC").ok();
            for sync in [false, true] {
                if fsync.as_deref().is_none_or(|f| f == sync.to_string()) {
                    turn_overhead(sync).await;
                }
            }
        }
        if on("throughput") {
            throughput(false).await;
            throughput(true).await;
        }
    });
}
