//! Session persistence benchmarks (a bench binary; numbers are printed,
//! not asserted), with the bundled `filesystem` store component:
//! - append latency of one message record, without and with fsync;
//! - resume time of a 10,000-message session (store read, parse, orphan
//!   check).
//!
//! Run: `cargo bench -p stud --bench sessions`.

#[path = "common/session_data.rs"]
mod session_data;

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use session_data::{message, pct};
use stud::extensions::{Discovery, ProjectScope, Registry};
use stud::kernel::persist::{ResumeTarget, message_record, read};
use stud::manifest::Kind;
use stud::paths::StudHome;
use stud::runtime::services::StderrServices;
use stud::runtime::{Extension, Runtime, RuntimeOptions};

async fn store(home: &std::path::Path, fsync: bool) -> Arc<Extension> {
    let home = StudHome::at(home);
    let mut discovery = Discovery::scan(&home, &ProjectScope::None);
    discovery
        .found
        .retain(|d| d.manifest.kind == Kind::SessionStore);
    let registry = Arc::new(Registry {
        runtime: Runtime::new(RuntimeOptions {
            cache: None,
            pooling: false,
        })
        .expect("runtime"),
        home: home.clone(),
        project_dir: home.root().to_path_buf(),
        services: Arc::new(StderrServices),
        configs: [(
            (stud::manifest::Kind::SessionStore, "filesystem".to_string()),
            json!({"fsync": fsync}),
        )]
        .into_iter()
        .collect(),
        fallback_configs: Default::default(),
        grants: Default::default(),
    });
    let report = registry.load_all(discovery.found).await;
    report.loaded.into_iter().next().expect("filesystem store")
}

async fn append_latency(fsync: bool) {
    let home = tempfile::tempdir().expect("tmp");
    let s = store(home.path(), fsync).await;
    let mut times = Vec::new();
    for i in 0..if fsync { 200 } else { 2000 } {
        let record = message_record(&message(i));
        let t = Instant::now();
        s.store_append("bench", &[record]).await.expect("append");
        times.push(t.elapsed());
    }
    println!(
        "sessions/append_one_message fsync={fsync:<5}  p50 {:>8.1} us  p99 {:>8.1} us",
        pct(times.clone(), 0.5).as_secs_f64() * 1e6,
        pct(times, 0.99).as_secs_f64() * 1e6
    );
}

async fn resume_10k() {
    let home = tempfile::tempdir().expect("tmp");
    let s = store(home.path(), false).await;
    let records: Vec<String> = (0..10_000).map(|i| message_record(&message(i))).collect();
    for chunk in records.chunks(500) {
        s.store_append("big", chunk).await.expect("append");
    }
    let manifest = json!({"session_id": "big", "store": "filesystem", "created_ms": 1, "updated_ms": 2, "project_root": "/p", "security_mode": "ask", "extensions": [], "state": {}, "usage": {}, "turns": 5000, "title": "bench"});
    s.store_write_manifest("big", &manifest.to_string())
        .await
        .expect("manifest");
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let r = read(&s, &ResumeTarget::Id("big".into()), "/p", &[])
            .await
            .expect("resume");
        times.push(t.elapsed());
        assert_eq!(r.history.len(), 10_000);
    }
    println!(
        "sessions/resume_10000_messages               median {:>8.1} ms",
        pct(times, 0.5).as_secs_f64() * 1e3
    );
    resume_end_to_end(home.path()).await;
}

/// The same session resumed by the `stud` binary (`run -p -c`), against a
/// fresh session in the same home: the difference is what resuming costs
/// a person (launch, read, repair, the turn's extra history).
async fn resume_end_to_end(home: &std::path::Path) {
    let project = tempfile::tempdir().expect("tmp");
    let root = project.path().canonicalize().expect("canonical");
    let manifest_path = home.join("data/filesystem/big/manifest.json");
    let text = std::fs::read_to_string(&manifest_path).expect("manifest");
    let text = text.replace(
        "\"/p\"",
        &serde_json::to_string(&root.display().to_string()).expect("json"),
    );
    std::fs::write(&manifest_path, text).expect("manifest");
    // History this long would be compacted first: give the model room.
    let settings = json!({"providers": {"scripted": {"script": {"repeat": true, "turns": [{"text": "ok"}]}, "context-window": 100_000_000}}});
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("settings");
    let run = |args: &[&str]| {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stud"))
            .args(args)
            .env("STUD_HOME", home)
            .current_dir(&root)
            .output()
            .expect("run stud");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        t.elapsed()
    };
    run(&["ext", "check"]);
    let (mut fresh, mut resumed) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        fresh.push(run(&["run", "-p", "--no-tools", "hi"]));
        resumed.push(run(&["run", "-p", "--no-tools", "--resume", "big", "hi"]));
    }
    let (f, r) = (pct(fresh, 0.5), pct(resumed, 0.5));
    println!(
        "sessions/stud_run_fresh                      median {:>8.1} ms",
        f.as_secs_f64() * 1e3
    );
    println!(
        "sessions/stud_run_resume_10000 (+ one turn)  median {:>8.1} ms ({:.1} ms more)",
        r.as_secs_f64() * 1e3,
        r.saturating_sub(f).as_secs_f64() * 1e3
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        append_latency(false).await;
        append_latency(true).await;
        resume_10k().await;
    });
}
