//! Extension lifecycle benchmarks (a bench binary; numbers are printed,
//! not asserted):
//! - install of a bundled-size component from a loopback URL (download,
//!   hash, unpack, validate, precompile with an empty cache, store, lock);
//! - `stud ext verify` over 50 installed extensions (the binary, end to
//!   end);
//! - reload latency: file replaced -> change noticed (watcher + debounce)
//!   -> new version swapped in at the next boundary;
//! - `stud ext install NAME@RANGE` from a loopback index (fetch the index,
//!   resolve, download, check digest and minisign signature, compile cold);
//! - `stud ext new` + `stud ext build` of a tool: a fresh target dir with
//!   the cargo registry cache warm, then the edit-and-rebuild loop.
//!
//! Run: `cargo bench -p stud --bench lifecycle`.

#[path = "../../tests/common/http.rs"]
#[allow(dead_code)]
mod http;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use http::{Reply, StaticServer, TestServer};
use serde_json::json;
use stud::extensions::Scope;
use stud::extensions::install::{Consent, InstallOptions, Source, install};
use stud::kernel::{LaunchOptions, launch};
use stud::paths::StudHome;
use stud::runtime::{Runtime, RuntimeOptions};
use tokio_util::sync::CancellationToken;

struct Yes;
impl Consent for Yes {
    fn ask(&mut self, _q: &str) -> bool {
        true
    }
}

fn wasm(name: &str) -> PathBuf {
    Path::new(stud_fixtures::WASM_OUT).join(name)
}

/// A bundled component, from the folder the binary embedded it from.
fn bundled(name: &str) -> PathBuf {
    Path::new(stud_bundled::WASM_OUT).join(name)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(stud_fixtures::FIXTURES_DIR).join(name)
}

/// A .tar.gz of one extension folder: `manifest` text plus the component.
fn archive(manifest: &str, component: &Path, file: &str) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut out, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mut add = |name: &str, bytes: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            tar.append_data(&mut h, name, bytes).expect("tar");
        };
        add("ext/extension.toml", manifest.as_bytes());
        add(
            &format!("ext/{file}"),
            &std::fs::read(component).expect("wasm"),
        );
        tar.into_inner().expect("tar").finish().expect("gz");
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn read_manifest(id: &str) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/read/extension.toml"),
    )
    .expect("manifest");
    text.replace("id = \"read\"", &format!("id = \"{id}\""))
}

async fn install_time() {
    let component = bundled("stud_read.wasm");
    let size = std::fs::metadata(&component).map(|m| m.len()).unwrap_or(0);
    let bytes = archive(&read_manifest("read-copy"), &component, "stud_read.wasm");
    let reps = 10;
    let server = TestServer::start((0..reps).map(|_| Reply::new(200, bytes.clone())).collect());
    let mut times = Vec::new();
    for _ in 0..reps {
        let home = tempfile::tempdir().expect("tmp");
        let cache = tempfile::tempdir().expect("tmp");
        let runtime = Runtime::new(RuntimeOptions {
            cache: Some(stud::runtime::CacheLocation {
                dir: cache.path().to_path_buf(),
                key_file: cache.path().join("key"),
            }),
            pooling: false,
        })
        .expect("runtime");
        let opts = InstallOptions {
            scope: Scope::Global,
            root: home.path().to_path_buf(),
            yes: true,
            expected_sha256: None,
            signatures: Default::default(),
            origin: None,
            expect: None,
            allow_signer_change: false,
        };
        let source = Source::parse(&format!("{}/read.tar.gz", server.url())).expect("source");
        let t = Instant::now();
        install(&source, &opts, &runtime, &mut Yes)
            .await
            .expect("install");
        times.push(t.elapsed());
    }
    println!(
        "lifecycle/install_from_url ({} KB component, cold compile)  median {:>8.1} ms",
        size / 1024,
        median(times).as_secs_f64() * 1e3
    );
}

async fn verify_50() {
    let home = tempfile::tempdir().expect("tmp");
    let cache = tempfile::tempdir().expect("tmp");
    let runtime = Runtime::new(RuntimeOptions {
        cache: Some(stud::runtime::CacheLocation {
            dir: cache.path().to_path_buf(),
            key_file: cache.path().join("key"),
        }),
        pooling: false,
    })
    .expect("runtime");
    let work = tempfile::tempdir().expect("tmp");
    for i in 0..50 {
        let dir = work.path().join(format!("e{i}"));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("extension.toml"),
            read_manifest(&format!("read-{i}")),
        )
        .expect("w");
        std::fs::copy(bundled("stud_read.wasm"), dir.join("stud_read.wasm")).expect("copy");
        let opts = InstallOptions {
            scope: Scope::Global,
            root: home.path().to_path_buf(),
            yes: true,
            expected_sha256: None,
            signatures: Default::default(),
            origin: None,
            expect: None,
            allow_signer_change: false,
        };
        install(&Source::Folder(dir), &opts, &runtime, &mut Yes)
            .await
            .expect("install");
    }
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stud"))
            .args(["ext", "verify"])
            .env("STUD_HOME", home.path())
            .output()
            .expect("stud");
        times.push(t.elapsed());
        assert!(out.status.success());
    }
    println!(
        "lifecycle/ext_verify_50 (stud binary, end to end)          median {:>8.1} ms",
        median(times).as_secs_f64() * 1e3
    );
}

async fn reload_latency() {
    let home = tempfile::tempdir().expect("tmp");
    let project = tempfile::tempdir().expect("tmp");
    let dir = home.path().join("extensions").join("counter");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::copy(
        fixture("counter").join("extension.toml"),
        dir.join("extension.toml"),
    )
    .expect("m");
    let component = dir.join("fixture_counter.wasm");
    std::fs::copy(wasm("fixture_counter.wasm"), &component).expect("c");
    std::fs::write(
        home.path().join("settings.json"),
        json!({"providers": {"scripted": {"script": {"repeat": true, "turns": [{"text": "ok"}]}}}})
            .to_string(),
    )
    .expect("settings");
    let mut l = launch(LaunchOptions {
        watch: true,
        ..LaunchOptions::headless(StudHome::at(home.path()), project.path().to_path_buf())
    })
    .await
    .expect("launch");
    let sub = l.bus.subscribe("bench", 4096);
    let versions = [
        wasm("fixture_counter_v2.wasm"),
        wasm("fixture_counter.wasm"),
    ];
    let cancel = CancellationToken::new();
    let (mut noticed, mut swapped) = (Vec::new(), Vec::new());
    for i in 0..10 {
        let bytes = std::fs::read(&versions[i % 2]).expect("wasm");
        let tmp = dir.join("next.tmp");
        std::fs::write(&tmp, bytes).expect("w");
        let t = Instant::now();
        std::fs::rename(&tmp, &component).expect("rename");
        // Wait for the watcher to notice.
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(5), sub.next())
                .await
                .expect("reload noticed")
                .expect("bus open");
            sub.ack();
            if ev.name == "extension.reload.requested" {
                noticed.push(t.elapsed());
                break;
            }
        }
        // The next boundary (a turn start) swaps it in.
        l.session.run_turn("hi", &cancel).await;
        let mut done = false;
        while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(50), sub.next()).await {
            sub.ack();
            if ev.name == "extension.reloaded" {
                done = true;
            }
        }
        assert!(done, "not swapped");
        swapped.push(t.elapsed());
    }
    l.shutdown().await;
    println!(
        "lifecycle/reload_noticed (watcher, 150 ms debounce)        median {:>8.1} ms",
        median(noticed).as_secs_f64() * 1e3
    );
    println!(
        "lifecycle/reload_swapped (noticed + compile + boundary)    median {:>8.1} ms",
        median(swapped).as_secs_f64() * 1e3
    );
}

fn stud(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stud"))
        .args(args)
        .env("STUD_HOME", home)
        .current_dir(cwd)
        .output()
        .expect("stud");
    assert!(
        out.status.success(),
        "stud {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn install_by_name() {
    let work = tempfile::tempdir().expect("tmp");
    let keys = tempfile::tempdir().expect("tmp");
    let site = work.path().join("site");
    let src = work.path().join("src");
    std::fs::create_dir_all(&site).expect("dir");
    std::fs::create_dir_all(&src).expect("dir");
    stud(
        keys.path(),
        work.path(),
        &["ext", "keygen", "-o", keys.path().to_str().expect("utf-8")],
    );
    let public = std::fs::read_to_string(keys.path().join("stud.pub")).expect("pub");
    let key = public.lines().nth(1).expect("key line").trim().to_string();
    std::fs::write(
        src.join("extension.toml"),
        read_manifest("read-copy").replace("version = \"0.1.0\"", "version = \"1.0.0\""),
    )
    .expect("w");
    std::fs::copy(bundled("stud_read.wasm"), src.join("stud_read.wasm")).expect("copy");
    let archive = site.join("read-copy-1.0.0.tar.gz");
    stud(
        keys.path(),
        work.path(),
        &[
            "ext",
            "pack",
            src.to_str().expect("utf-8"),
            "-o",
            archive.to_str().expect("utf-8"),
            "--key",
            keys.path().join("stud.key").to_str().expect("utf-8"),
        ],
    );
    use sha2::Digest as _;
    let sha = hex::encode(sha2::Sha256::digest(
        std::fs::read(&archive).expect("archive"),
    ));
    let index = json!({"extensions": [{"id": "read-copy", "kind": "tool", "versions": [
        {"version": "1.0.0", "url": "read-copy-1.0.0.tar.gz", "sha256": sha,
         "signature": "read-copy-1.0.0.tar.gz.minisig", "contract": "^0.1"}
    ]}]});
    std::fs::write(site.join("index.json"), index.to_string()).expect("index");
    let server = StaticServer::start(&site);
    let settings = json!({
        "extensionIndexes": [server.url("index.json")],
        "trustedPublishers": [{"name": "Ada", "key": key}],
        "signaturePolicy": "trusted"
    });
    let mut times = Vec::new();
    for _ in 0..10 {
        let home = tempfile::tempdir().expect("tmp");
        std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("s");
        let t = Instant::now();
        stud(
            home.path(),
            work.path(),
            &["ext", "install", "read-copy@^1", "--yes"],
        );
        times.push(t.elapsed());
    }
    println!(
        "lifecycle/install_by_name (loopback index, signed, cold)   median {:>8.1} ms",
        median(times).as_secs_f64() * 1e3
    );
}

fn new_and_build() {
    let home = tempfile::tempdir().expect("tmp");
    let work = tempfile::tempdir().expect("tmp");
    let t = Instant::now();
    stud(
        home.path(),
        work.path(),
        &["ext", "new", "--kind", "tool", "shout"],
    );
    let new_ms = t.elapsed().as_secs_f64() * 1e3;
    let dir = work.path().join("shout");
    let t = Instant::now();
    stud(home.path(), &dir, &["ext", "build"]);
    let first = t.elapsed().as_secs_f64();
    let lib = dir.join("src/lib.rs");
    let mut times = Vec::new();
    for i in 0..3 {
        let text = std::fs::read_to_string(&lib).expect("lib");
        std::fs::write(&lib, format!("{text}\n// edit {i}\n")).expect("edit");
        let t = Instant::now();
        stud(home.path(), &dir, &["ext", "build"]);
        times.push(t.elapsed());
    }
    println!("lifecycle/ext_new (crate + SDK kit unpacked)               {new_ms:>8.1} ms");
    println!("lifecycle/ext_build_first (fresh target dir, warm registry) {first:>7.1} s");
    println!(
        "lifecycle/ext_build_after_edit (the author's loop)         median {:>8.1} ms",
        median(times).as_secs_f64() * 1e3
    );
}

fn main() {
    install_by_name();
    new_and_build();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        install_time().await;
        verify_50().await;
        reload_latency().await;
    });
}
