//! The component runtime: one engine, cached compiled code, one linker per
//! world and grant set, one `InstancePre` per extension and a `Store` per
//! live instance with a memory limit and a per-call deadline.

pub mod cache;
pub mod cancel;
pub mod caps;
pub mod checked_configs;
pub mod code;
pub mod contract;
pub mod cores;
pub mod domain;
pub mod emit_limit;
pub mod engine;
pub mod error;
pub mod extension;
pub mod health;
pub mod host_state;
pub mod inspect;
pub mod interrupt;
pub mod kinds;
pub mod limits;
pub mod linker;
pub mod load;
mod mapped;
pub mod meter;
pub mod net;
pub mod ownership;
pub mod publish;
// The policy is data (`stud-config`); its checks are here (`caps`).
pub use crate::protected_paths;
pub mod services;
pub mod start_work;
mod stderr;
pub mod styled_text;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wasmtime::Engine;
use wasmtime::component::Linker;

pub use cache::{CacheLocation, CacheStats, CodeSource};
pub use code::ComponentBytes;
pub use engine::Allocator;
pub use error::{CallError, LoadError, RuntimeError};
pub use extension::Extension;

/// How long retiring one extension (`deactivate`, `dispose`) may take in
/// all, at a reload or the session's end.
pub const RETIRE_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);
pub use kinds::{KnownSpec, SpecSource, tool_spec_from_json, tool_spec_to_json};
pub use load::LoadSpec;

use crate::manifest::Kind;
use caps::HostInterface;
use host_state::HostState;

pub struct RuntimeOptions {
    /// Where compiled code is cached; `None` compiles on every load.
    pub cache: Option<CacheLocation>,
    /// Try the pooling allocator first.
    pub pooling: bool,
}

pub(crate) type LinkerKey = (Kind, Vec<HostInterface>);

pub struct Runtime {
    engine: Engine,
    allocator: Allocator,
    cache: cache::CompileCache,
    /// Why the disk cache is off, when it should have been on.
    cache_problem: Option<String>,
    linkers: Mutex<HashMap<LinkerKey, Arc<Linker<HostState>>>>,
    base_linker: std::sync::OnceLock<Result<Linker<HostState>, String>>,
}

impl Runtime {
    pub fn new(options: RuntimeOptions) -> Result<Arc<Self>, RuntimeError> {
        let engine::Built {
            engine,
            allocator,
            publishing,
        } = engine::build_engine(options.pooling)?;
        let (cache, problem) = cache::CompileCache::new(&engine, publishing, options.cache);
        Ok(Arc::new(Runtime {
            engine,
            allocator,
            cache,
            cache_problem: problem.map(|e| format!("{e}; compiled code is not cached")),
            linkers: Mutex::default(),
            base_linker: std::sync::OnceLock::new(),
        }))
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn allocator(&self) -> Allocator {
        self.allocator
    }

    /// Why compiled code is not cached although a cache was asked for.
    pub fn cache_problem(&self) -> Option<&str> {
        self.cache_problem.as_deref()
    }

    /// Compile, cache-hit and discard counters.
    pub fn cache_stats(&self) -> &CacheStats {
        &self.cache.stats
    }

    fn linker(&self, key: LinkerKey) -> wasmtime::Result<Arc<Linker<HostState>>> {
        let known = self
            .linkers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(linker) = known {
            return Ok(linker);
        }
        // Built outside the lock: threads linking extensions of other keys
        // (the start links several at once) need not wait for this one.
        let built = Arc::new(linker::extend(self.base_linker()?.clone(), &key.1)?);
        let mut linkers = self.linkers.lock().unwrap_or_else(|p| p.into_inner());
        Ok(linkers.entry(key).or_insert(built).clone())
    }

    /// The part every linker shares ([`linker::base`]), built once, by the
    /// first link (a second one waits for it rather than building it too).
    fn base_linker(&self) -> wasmtime::Result<&Linker<HostState>> {
        self.base_linker
            .get_or_init(|| linker::base(&self.engine).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| wasmtime::Error::msg(e.clone()))
    }
}
