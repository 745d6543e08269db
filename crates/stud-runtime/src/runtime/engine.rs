//! The one wasmtime `Engine` per process: epoch interruption for deadlines,
//! the pooling allocator when the platform can reserve it, and a ticker
//! thread that advances the epoch.

use std::time::Duration;

use wasmtime::{Config, Engine};

use super::error::RuntimeError;
use super::publish::{self, Publishing};

pub use stud_engine::MAX_MEMORY_BYTES;

/// Epoch tick. Deadlines are whole ticks, so they are accurate to this.
pub const TICK: Duration = Duration::from_millis(10);

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

/// The engine and how it was set up.
pub struct Built {
    pub engine: Engine,
    pub allocator: Allocator,
    pub publishing: Publishing,
}

/// Build the engine, trying the pooling allocator first.
pub fn build_engine(prefer_pooling: bool) -> Result<Built, RuntimeError> {
    if prefer_pooling {
        let mut config = with_profiler(stud_engine::pooling());
        let publishing = publish::configure(&mut config);
        if let Ok(engine) = Engine::new(&config) {
            start_ticker(&engine);
            return Ok(Built {
                engine,
                allocator: Allocator::Pooling,
                publishing,
            });
        }
    }
    let mut config = with_profiler(stud_engine::base_config());
    let publishing = publish::configure(&mut config);
    let engine = Engine::new(&config).map_err(|e| RuntimeError::Engine(e.to_string()))?;
    start_ticker(&engine);
    Ok(Built {
        engine,
        allocator: Allocator::OnDemand,
        publishing,
    })
}

/// `STUD_PROFILE=perfmap`: name guest functions for `perf` (written to
/// /tmp/perf-<pid>.map), so an extension author can see where a call's
/// time goes.
fn with_profiler(mut config: Config) -> Config {
    if std::env::var_os("STUD_PROFILE").is_some_and(|v| v == "perfmap") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
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
