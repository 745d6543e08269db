//! Runtime benchmarks (numbers go in the closing notes; nothing asserted):
//! - a hook-style call with a 1 KB and a 100 KB payload,
//! - instantiation from the `InstancePre` (including `init`),
//! - cold compile vs cached load of each bundled component.
//!
//! Run: `cargo bench -p stud --bench runtime`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use stud::bundled::BUNDLED;
use stud::contract::HOST_CONTRACT;
use stud::digest::Sha256Digest;
use stud::manifest::{ExtensionId, parse_manifest};
use stud::runtime::cache::CompileCache;
use stud::runtime::domain::{HookSlot, Phase, Stage};
use stud::runtime::services::{LogLevel, Services};
use stud::runtime::{Extension, LoadSpec, Runtime, RuntimeOptions};

struct Quiet;

impl Services for Quiet {
    fn log(&self, _: &ExtensionId, _: LogLevel, _: &str) {}
    fn emit(&self, _: &ExtensionId, _: &str, _: &str) {}
}

fn load(rt: &Arc<Runtime>, dir: &str) -> Extension {
    let b = BUNDLED
        .iter()
        .find(|b| b.dir == dir)
        .expect("bundled extension");
    let manifest =
        parse_manifest(b.manifest, std::path::Path::new(b.dir), &HOST_CONTRACT).expect("manifest");
    rt.load(LoadSpec {
        manifest,
        scope: stud::extensions::Scope::Bundled,
        component_path: b.component_file.into(),
        bytes: stud::runtime::ComponentBytes::Embedded(b.component),
        expected_digest: None,
        config: None,
        dirs: vec![],
        network: Vec::new(),
        secrets: Default::default(),
        processes: Default::default(),
        net_limits: Default::default(),
        sockets: Vec::new(),
        protected: Default::default(),
        state: None,
        services: Arc::new(Quiet),
    })
    .expect("load")
}

/// A tool-call payload padded to about `size` bytes with a harmless path.
fn payload(size: usize) -> String {
    let pad = "x".repeat(size.saturating_sub(80));
    format!(
        r#"{{"call":{{"id":"c1","name":"read","arguments":{{"path":"src/main.rs","note":"{pad}"}}}}}}"#
    )
}

fn hook_calls(c: &mut Criterion) {
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let rt = Runtime::new(RuntimeOptions {
        cache: None,
        pooling: true,
    })
    .expect("runtime");
    let guard = load(&rt, "protect-paths");
    tokio.block_on(guard.start()).expect("start");
    let slot = HookSlot {
        stage: Stage::ToolCall,
        phase: Phase::Pre,
    };
    let mut group = c.benchmark_group("hook_call");
    for (name, size) in [("1KB", 1024), ("100KB", 100 * 1024)] {
        let p = payload(size);
        group.bench_function(name, |b| {
            b.to_async(&tokio)
                .iter(|| async { guard.hook_run(slot, &p).await.expect("call") })
        });
    }
    group.finish();
}

fn instantiation(c: &mut Criterion) {
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let mut group = c.benchmark_group("instantiate");
    for pooling in [true, false] {
        let rt = Runtime::new(RuntimeOptions {
            cache: None,
            pooling,
        })
        .expect("runtime");
        let ext = load(&rt, "protect-paths");
        let name = rt.allocator().as_str();
        group.bench_function(name, |b| {
            b.to_async(&tokio)
                .iter(|| async { ext.restart().await.expect("restart") })
        });
    }
    group.finish();
}

fn compile_vs_cache(c: &mut Criterion) {
    let rt = Runtime::new(RuntimeOptions {
        cache: None,
        pooling: false,
    })
    .expect("runtime");
    let engine = rt.engine();
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = stud::runtime::publish::Publishing::Copy;
    let (uncached, _) = CompileCache::new(engine, copy, None);
    let (cached, _) = CompileCache::new(
        engine,
        copy,
        Some(stud::runtime::CacheLocation {
            dir: dir.path().to_path_buf(),
            key_file: dir.path().join("key"),
        }),
    );
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    for b in BUNDLED {
        let digest = Sha256Digest::of(b.component);
        cached
            .load(engine, b.component, &digest)
            .expect("warm the cache");
        group.bench_function(format!("{}/cold", b.dir), |bench| {
            bench.iter(|| {
                uncached
                    .load(engine, b.component, &digest)
                    .expect("compile")
            })
        });
        group.bench_function(format!("{}/cached", b.dir), |bench| {
            bench.iter(|| cached.load(engine, b.component, &digest).expect("cache"))
        });
    }
    group.finish();
}

criterion_group!(benches, hook_calls, instantiation, compile_vs_cache);
criterion_main!(benches);
