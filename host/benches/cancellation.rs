//! How soon a call stops once it must (issue 34), printed as p50 and p99
//! of 20 runs, never asserted:
//! - a guest blocked in a WASI sleep: from its deadline to the call's
//!   deadline error (the `hostile` fixture, `mode: sleep`, 200 ms limit);
//! - a guest computing in a tight loop: the same (`mode: loop`);
//! - both again with `Extension::cancel` 100 ms into the call instead of a
//!   deadline, to the call's cancelled error;
//! - Ctrl-C: SIGINT to the `stud` binary while its tool sleeps inside
//!   WASI (or loops), to the `tool.cancelled` event on its stdout
//!   (`--output-format stream-json`).
//!
//! Run: `cargo bench -p stud --bench cancellation` (`STUD_BENCH_ONLY=deadline`
//! or `=ctrl-c` for one half; `STUD_BENCH_BIN=PATH` runs another `stud`
//! binary for the Ctrl-C rows).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use stud::contract::HOST_CONTRACT;
use stud::manifest::{ExtensionId, parse_manifest};
use stud::runtime::services::{LogLevel, Services};
use stud::runtime::{CallError, Extension, LoadSpec, Runtime, RuntimeOptions};

const RUNS: usize = 20;
/// The deadline of the calls measured (`limits.timeout-ms`).
const DEADLINE_MS: u64 = 200;

struct Quiet;

impl Services for Quiet {
    fn log(&self, _: &ExtensionId, _: LogLevel, _: &str) {}
    fn emit(&self, _: &ExtensionId, _: &str, _: &str) {}
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(stud_fixtures::FIXTURES_DIR).join("hostile")
}

/// The `hostile` manifest with another deadline.
fn hostile_manifest(timeout_ms: u64) -> String {
    std::fs::read_to_string(fixture_dir().join("extension.toml"))
        .expect("hostile manifest")
        .replace("timeout-ms = 500", &format!("timeout-ms = {timeout_ms}"))
}

fn hostile_component() -> PathBuf {
    PathBuf::from(stud_fixtures::WASM_OUT).join("fixture_hostile.wasm")
}

fn load_hostile(rt: &Arc<Runtime>) -> Extension {
    let manifest = parse_manifest(
        &hostile_manifest(DEADLINE_MS),
        &fixture_dir().join("extension.toml"),
        &HOST_CONTRACT,
    )
    .expect("manifest");
    let path = hostile_component();
    let bytes = std::fs::read(&path).expect("hostile component");
    rt.load(LoadSpec {
        manifest,
        component_path: path,
        bytes: bytes.into(),
        expected_digest: None,
        config: None,
        scope: stud::extensions::Scope::Global,
        dirs: vec![],
        protected: Default::default(),
        network: Vec::new(),
        secrets: Default::default(),
        processes: Default::default(),
        net_limits: Default::default(),
        sockets: Vec::new(),
        state: None,
        services: Arc::new(Quiet),
    })
    .expect("load hostile")
}

/// p50 and p99 (of 20 runs: the slowest) in ms.
fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let at = |q: f64| {
        let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        v[i].as_secs_f64() * 1e3
    };
    (at(0.50), at(0.99))
}

fn print(label: &str, runs: Vec<Duration>) {
    let (p50, p99) = percentiles(runs);
    println!("{label:<64} p50 {p50:>7.2} ms  p99 {p99:>7.2} ms");
}

/// Time from a call's deadline to its deadline error, `mode` being what
/// the guest does meanwhile. A fresh instance is started before each run
/// (a stopped call's instance is thrown away), so the call's own deadline
/// starts as it is made.
fn past_deadline(tokio: &tokio::runtime::Runtime, ext: &Extension, mode: &str) -> Vec<Duration> {
    let args = json!({"mode": mode}).to_string();
    (0..RUNS)
        .map(|_| {
            tokio.block_on(async {
                ext.start().await.expect("start");
                let started = Instant::now();
                let out = ext.tool_invoke("c1", &args).await;
                let took = started.elapsed();
                assert!(
                    matches!(out, Err(CallError::Timeout { .. })),
                    "{mode}: expected the deadline error, got {out:?}"
                );
                took.saturating_sub(Duration::from_millis(DEADLINE_MS))
            })
        })
        .collect()
}

/// Time from `Extension::cancel` (what Ctrl-C does to a running tool)
/// to the call's cancelled error, the guest doing `mode`.
fn after_cancel(
    tokio: &tokio::runtime::Runtime,
    ext: &Arc<Extension>,
    mode: &str,
) -> Vec<Duration> {
    let args = json!({"mode": mode}).to_string();
    (0..RUNS)
        .map(|_| {
            tokio.block_on(async {
                ext.start().await.expect("start");
                let call = {
                    let (ext, args) = (ext.clone(), args.clone());
                    tokio::spawn(async move { ext.tool_invoke("c1", &args).await })
                };
                // Well inside the sleep (or loop), before its deadline.
                tokio::time::sleep(Duration::from_millis(DEADLINE_MS / 2)).await;
                let sent = Instant::now();
                ext.cancel();
                let out = call.await.expect("join");
                let took = sent.elapsed();
                assert!(
                    matches!(out, Err(CallError::Cancelled { .. })),
                    "{mode}: expected the cancelled error, got {out:?}"
                );
                took
            })
        })
        .collect()
}

fn deadlines() {
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let rt = Runtime::new(RuntimeOptions {
        cache: None,
        pooling: true,
    })
    .expect("runtime");
    let ext = Arc::new(load_hostile(&rt));
    // Compile and link outside the measured runs.
    tokio.block_on(ext.start()).expect("start");
    for (mode, what) in [("sleep", "wasi_sleep"), ("loop", "tight_loop")] {
        print(
            &format!("deadline/{what} (deadline -> deadline error)"),
            past_deadline(&tokio, &ext, mode),
        );
        print(
            &format!("cancel/{what} (Extension::cancel -> cancelled error)"),
            after_cancel(&tokio, &ext, mode),
        );
    }
}

/// The binary under test: `STUD_BENCH_BIN`, else the one this bench was
/// built with.
fn stud_binary() -> PathBuf {
    std::env::var_os("STUD_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_stud")), PathBuf::from)
}

/// A home with `hostile` installed (no deadline to speak of) and the
/// scripted provider calling it with `mode`.
fn ctrl_c_home(home: &Path, project: &Path, mode: &str) {
    let ext = home.join("extensions").join("hostile");
    std::fs::create_dir_all(&ext).expect("mkdir");
    std::fs::write(ext.join("extension.toml"), hostile_manifest(600_000)).expect("manifest");
    std::fs::copy(hostile_component(), ext.join("fixture_hostile.wasm")).expect("component");
    let settings = json!({
        "active": {"provider": "scripted"},
        "providers": {"scripted": {"script-file": "script.json"}}
    });
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("settings");
    let script = json!({"turns": [
        {"text": "", "tool_calls": [{"name": "hostile", "arguments": {"mode": mode}}]},
        {"text": "never"}
    ]});
    std::fs::write(project.join("script.json"), script.to_string()).expect("script");
}

/// SIGINT once the tool has been running a while, to its `tool.cancelled`.
fn ctrl_c_once(home: &Path, project: &Path, cache: &Path) -> Duration {
    let mut child = Command::new(stud_binary())
        .args([
            "run",
            "-p",
            "--yolo",
            "--output-format",
            "stream-json",
            "go",
        ])
        .env("STUD_HOME", home)
        .env("STUD_CACHE_DIR", cache)
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start stud");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("\"tool.started\""));
    assert!(started, "the tool never started");
    // Well inside the guest's sleep (or loop) by now.
    std::thread::sleep(Duration::from_millis(200));
    let sent = Instant::now();
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(killed, 0, "kill -INT");
    let cancelled = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("\"tool.cancelled\""));
    let took = sent.elapsed();
    assert!(cancelled, "no tool.cancelled event");
    for _ in lines {}
    let status = child.wait().expect("wait");
    assert_eq!(
        status.code(),
        Some(130),
        "a cancelled one-shot run exits 130"
    );
    took
}

fn ctrl_c() {
    for mode in ["sleep", "loop"] {
        let home = tempfile::tempdir().expect("tmp");
        let project = tempfile::tempdir().expect("tmp");
        let cache = tempfile::tempdir().expect("tmp");
        ctrl_c_home(home.path(), project.path(), mode);
        // Fill the compile cache.
        ctrl_c_once(home.path(), project.path(), cache.path());
        let runs = (0..RUNS)
            .map(|_| ctrl_c_once(home.path(), project.path(), cache.path()))
            .collect();
        let what = if mode == "sleep" {
            "wasi_sleep"
        } else {
            "tight_loop"
        };
        print(
            &format!("ctrl_c/{what} (SIGINT -> tool.cancelled on stdout)"),
            runs,
        );
    }
}

fn main() {
    let only = std::env::var("STUD_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "deadline" {
        deadlines();
    }
    if only.is_empty() || only == "ctrl-c" {
        ctrl_c();
    }
}
