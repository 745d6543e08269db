//! The `postgres` session store against the `filesystem` one on the same
//! machine (a bench binary; numbers are printed, not asserted), on a real
//! PostgreSQL server it starts itself (`tests/common/pg.rs`):
//! - append latency of one message record, p50 and p99 (the filesystem
//!   store with fsync, as it runs by default; PostgreSQL commits with its
//!   default `synchronous_commit = on`);
//! - resume of a 10,000-message session (store read, parse, orphan check);
//! - `session list --all` over 100,000 sessions: the store's `list` inside
//!   the process, and `stud session list --all --json` from outside.
//!
//! Run: `cargo bench -p stud --bench postgres` (needs Debian's
//! `postgresql` package, as the tests do).

#[path = "../../tests/common/pg.rs"]
#[allow(dead_code)]
mod pg;

#[path = "common/session_data.rs"]
mod session_data;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use session_data::{message, pct};
use stud::extensions::{Discovery, ProjectScope, Registry, UserGrants};
use stud::kernel::persist::{ResumeTarget, message_record, read};
use stud::paths::StudHome;
use stud::runtime::services::StderrServices;
use stud::runtime::{Extension, Runtime, RuntimeOptions};

fn settings(home: &std::path::Path, url: &str) -> Value {
    let pw = home.join("pgpass");
    std::fs::write(&pw, pg::Pg::PASSWORD).expect("password file");
    json!({
        "active": {"sessionStore": "postgres"},
        "sessionStores": {"postgres": {"url": url}, "filesystem": {"fsync": true}},
        "secrets": {"postgres": {"PGPASSWORD": {"file": pw}}}
    })
}

async fn store(home: &std::path::Path, settings: &Value, id: &str) -> Arc<Extension> {
    let settings = stud::config::Settings::from_value(settings).expect("settings");
    let (grants, _) = UserGrants::from_settings(&settings);
    let home = StudHome::at(home);
    let mut discovery = Discovery::scan(&home, &ProjectScope::None);
    discovery.found.retain(|d| d.manifest.id.as_str() == id);
    let registry = Arc::new(Registry {
        runtime: Runtime::new(RuntimeOptions {
            cache: None,
            pooling: false,
        })
        .expect("runtime"),
        home: home.clone(),
        project_dir: home.root().to_path_buf(),
        services: Arc::new(StderrServices),
        configs: settings.extension_configs(),
        fallback_configs: settings.extension_configs(),
        grants,
    });
    let report = registry.load_all(discovery.found).await;
    if let Some((_, e)) = report.failed.first() {
        panic!("{id}: {e}");
    }
    let s = report.loaded.into_iter().next().expect("the store");
    s.start().await.expect("the store starts");
    s
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn append_latency(s: &Extension, label: &str, n: usize) {
    let mut times = Vec::new();
    for i in 0..n {
        let record = message_record(&message(i));
        let t = Instant::now();
        s.store_append("bench", &[record]).await.expect("append");
        times.push(t.elapsed());
    }
    println!(
        "postgres/append_one_message {label:<12} p50 {:>8.1} us  p99 {:>8.1} us",
        pct(times.clone(), 0.5).as_secs_f64() * 1e6,
        pct(times, 0.99).as_secs_f64() * 1e6
    );
}

async fn resume_10k(s: &Arc<Extension>, label: &str) {
    let records: Vec<String> = (0..10_000).map(|i| message_record(&message(i))).collect();
    for chunk in records.chunks(500) {
        s.store_append("big", chunk).await.expect("append");
    }
    let manifest = json!({"session_id": "big", "store": s.id().as_str(), "created_ms": 1, "updated_ms": 2, "project_root": "/p", "security_mode": "ask", "extensions": [], "state": {}, "usage": {}, "turns": 5000, "title": "bench"});
    s.store_write_manifest("big", &manifest.to_string())
        .await
        .expect("manifest");
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let r = read(s, &ResumeTarget::Id("big".into()), "/p", &[])
            .await
            .expect("resume");
        times.push(t.elapsed());
        assert_eq!(r.history.len(), 10_000);
    }
    println!(
        "postgres/resume_10000_messages {label:<12} median {:>8.1} ms",
        ms(pct(times, 0.5))
    );
}

/// 100,000 sessions of 20 projects on 50 machines, written straight into
/// the tables (as a team's months of use would leave them).
fn fill(server: &pg::Pg, db: &str) {
    server.psql(
        db,
        "INSERT INTO stud_sessions (session_id, project_root, machine, username, created_ms, updated_ms, title, manifest)
         SELECT 's-' || i, '/work/project-' || (i % 20), 'machine-' || (i % 50), 'dev', 1700000000000 + i, 1700000000000 + i,
                'a session about item ' || i, '{\"session_id\":\"s-' || i || '\"}'
         FROM generate_series(1, 100000) AS i",
    );
}

async fn list_all(server: &pg::Pg, db: &str, home: &std::path::Path, s: &Extension) {
    let mut inside = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let list = s.store_list().await.expect("list");
        inside.push(t.elapsed());
        assert!(list.len() >= 100_000);
    }
    println!(
        "postgres/list_100000_sessions (store list)   median {:>8.1} ms",
        ms(pct(inside, 0.5))
    );
    let project = tempfile::tempdir().expect("tmp");
    let run = |args: &[&str]| {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stud"))
            .args(args)
            .env("STUD_HOME", home)
            .current_dir(project.path())
            .output()
            .expect("run stud");
        assert!(
            out.status.success(),
            "stud {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        (t.elapsed(), out.stdout.len())
    };
    // The first run fills the compile cache.
    run(&["session", "list"]);
    let (mut text, mut json, mut here) = (Vec::new(), Vec::new(), Vec::new());
    let (mut text_bytes, mut json_bytes) = (0, 0);
    for _ in 0..10 {
        let (t, n) = run(&["session", "list", "--all"]);
        text.push(t);
        text_bytes = n;
        let (t, n) = run(&["session", "list", "--all", "--json"]);
        json.push(t);
        json_bytes = n;
        here.push(run(&["session", "list"]).0);
    }
    println!(
        "postgres/stud_session_list_all_100000        median {:>8.1} ms ({} KB of text)",
        ms(pct(text, 0.5)),
        text_bytes / 1024
    );
    println!(
        "postgres/stud_session_list_all_100000 --json median {:>8.1} ms ({} KB of JSON)",
        ms(pct(json, 0.5)),
        json_bytes / 1024
    );
    println!(
        "postgres/stud_session_list_this_folder       median {:>8.1} ms",
        ms(pct(here, 0.5))
    );
    let _ = (server, db);
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = pg::Pg::start();
    server.psql("postgres", "CREATE DATABASE bench");
    let url = server.url("bench");
    rt.block_on(async {
        let home = tempfile::tempdir().expect("tmp");
        let settings = settings(home.path(), &url);
        std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");
        let fs = store(home.path(), &settings, "filesystem").await;
        let pg = store(home.path(), &settings, "postgres").await;
        append_latency(&fs, "filesystem", 300).await;
        append_latency(&pg, "postgres", 2000).await;
        resume_10k(&fs, "filesystem").await;
        resume_10k(&pg, "postgres").await;
        fill(&server, "bench");
        list_all(&server, "bench", home.path(), &pg).await;
    });
}
