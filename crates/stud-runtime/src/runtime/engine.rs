//! The one wasmtime `Engine` per process: epoch interruption for deadlines,
//! the pooling allocator when the platform can reserve it, and a ticker
//! thread that advances the epoch.

use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::error::RuntimeError;

/// Epoch tick. Deadlines are whole ticks, so they are accurate to this.
pub const TICK: Duration = Duration::from_millis(10);

/// Largest linear memory any extension may be granted (`limits.memory-mib`
/// is capped at this too).
pub const MAX_MEMORY_BYTES: usize = 4 << 30;

/// Which instance allocator the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocator {
    Pooling,
    OnDemand,
}

impl Allocator {
    pub fn as_str(self) -> &'static str {
        match self {
            Allocator::Pooling => "pooling",
            Allocator::OnDemand => "on-demand",
        }
    }
}

/// Build the engine, trying the pooling allocator first.
pub fn build_engine(prefer_pooling: bool) -> Result<(Engine, Allocator), RuntimeError> {
    if prefer_pooling {
        let mut config = base_config();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config()));
        if let Ok(engine) = Engine::new(&config) {
            start_ticker(&engine);
            return Ok((engine, Allocator::Pooling));
        }
    }
    let engine = Engine::new(&base_config()).map_err(|e| RuntimeError::Engine(e.to_string()))?;
    start_ticker(&engine);
    Ok((engine, Allocator::OnDemand))
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    // Async exports are not used; without this a small call costs half.
    config.concurrency_support(false);
    config.max_wasm_stack(1 << 20);
    // `STUD_PROFILE=perfmap`: name guest functions for `perf` (written to
    // /tmp/perf-<pid>.map), so an extension author can see where a call's
    // time goes.
    if std::env::var_os("STUD_PROFILE").is_some_and(|v| v == "perfmap") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

fn pooling_config() -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(256);
    pool.total_core_instances(2048);
    pool.total_memories(256);
    pool.total_tables(1024);
    pool.max_memory_size(MAX_MEMORY_BYTES);
    pool
}

/// Advance the epoch every [`TICK`] until the engine is dropped.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("stud-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                super::interrupt::nudge_overdue();
                std::thread::sleep(TICK);
            }
        });
    // Without a ticker deadlines never fire; failing to spawn a thread at
    // start-up means the process is out of resources anyway.
    if let Err(e) = spawned {
        eprintln!("stud: cannot start the epoch ticker thread: {e}; extension deadlines are off");
    }
}

/// Ticks for a deadline, rounded up, at least one.
pub fn ticks(timeout: Duration) -> u64 {
    (timeout.as_millis().div_ceil(TICK.as_millis()) as u64).max(1)
}
