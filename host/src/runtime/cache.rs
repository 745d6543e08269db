//! Compiled-code cache on disk, keyed by the component's sha256 and the
//! engine's compatibility hash. A second start deserializes instead of
//! compiling; a changed component has another key; a corrupt entry (its own
//! checksum does not match) is deleted and recompiled.

use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::digest::Sha256Digest;

/// Where a loaded component's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Compiled now (and stored, when the cache is on).
    Compiled,
    /// Deserialized from the cache.
    Cached,
}

impl CodeSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CodeSource::Compiled => "compiled",
            CodeSource::Cached => "cache",
        }
    }
}

/// Counters, so tests can prove what happened without timing.
#[derive(Debug, Default)]
pub struct CacheStats {
    pub compiled: AtomicU64,
    pub cache_hits: AtomicU64,
    pub discarded: AtomicU64,
}

pub struct CompileCache {
    dir: Option<PathBuf>,
    engine_key: String,
    pub stats: CacheStats,
}

impl CompileCache {
    /// `dir = None` disables the disk cache (every load compiles).
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        CompileCache {
            dir,
            engine_key: engine_key(engine),
            stats: CacheStats::default(),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Compiled code for `bytes`, whose digest the caller has verified.
    pub fn load(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &Sha256Digest,
    ) -> wasmtime::Result<(Component, CodeSource)> {
        let Some(dir) = &self.dir else {
            self.stats.compiled.fetch_add(1, Ordering::Relaxed);
            return Ok((Component::new(engine, bytes)?, CodeSource::Compiled));
        };
        let base = dir.join(format!("{}-{}", digest.hex(), self.engine_key));
        let code_path = base.with_extension("cwasm");
        let sum_path = base.with_extension("sha256");
        if let Some(component) = self.read_entry(engine, &code_path, &sum_path) {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((component, CodeSource::Cached));
        }
        self.stats.compiled.fetch_add(1, Ordering::Relaxed);
        let component = Component::new(engine, bytes)?;
        // A cache that cannot be written only costs speed.
        let _ = write_entry(dir, &code_path, &sum_path, &component);
        Ok((component, CodeSource::Compiled))
    }

    fn read_entry(&self, engine: &Engine, code_path: &Path, sum_path: &Path) -> Option<Component> {
        let code = std::fs::read(code_path).ok()?;
        let recorded = std::fs::read_to_string(sum_path).ok();
        let intact =
            recorded.as_deref().map(str::trim) == Some(hex::encode(Sha256::digest(&code)).as_str());
        if intact {
            // SAFETY: the bytes were produced by `Component::serialize` of an
            // engine with the same compatibility hash (it is in the file
            // name), and their checksum matches what we wrote next to them.
            if let Ok(c) = unsafe { Component::deserialize(engine, &code) } {
                return Some(c);
            }
        }
        self.stats.discarded.fetch_add(1, Ordering::Relaxed);
        let _ = std::fs::remove_file(code_path);
        let _ = std::fs::remove_file(sum_path);
        None
    }
}

fn write_entry(
    dir: &Path,
    code_path: &Path,
    sum_path: &Path,
    component: &Component,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let code = component.serialize().map_err(std::io::Error::other)?;
    let sum = hex::encode(Sha256::digest(&code));
    atomic_write(sum_path, sum.as_bytes())?;
    atomic_write(code_path, &code)
}

/// Write to a temp file in the same folder, then rename over the target.
fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// A short stable key of the engine's configuration and version.
fn engine_key(engine: &Engine) -> String {
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut h = ShaHasher(Sha256::new());
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut h);
    hex::encode(&h.0.finalize()[..8])
}
