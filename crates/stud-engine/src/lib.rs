//! The wasmtime configuration stud compiles and runs components with.
//!
//! One definition for two users: the runtime's engine, and the build
//! script of `stud-native`, which compiles the bundled extensions to
//! native code ahead of time. Code compiled under one configuration loads
//! only into an engine of the same one, so both take it from here, and
//! [`engine_key`] names it so a mismatch is seen before any code is used.

use std::hash::Hasher;

use sha2::{Digest as _, Sha256};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Largest linear memory any extension may be granted (`limits.memory-mib`
/// is capped at this too).
pub const MAX_MEMORY_BYTES: usize = 4 << 30;

/// The configuration every engine starts from: the component model, epoch
/// interruption for deadlines, no async exports, a 1 MiB wasm stack, and
/// linear memory initialized by copying the data segments.
///
/// Copy-on-write images (wasmtime's default) pay at each module's first
/// instantiation in a process (a memfd created, written and mapped) to
/// make later ones cheap; a session instantiates most components once, so
/// the copy is cheaper: 3-5 ms less CPU in a two-request session, and a
/// re-instantiation costs the same 37.5 us (docs/benchmarks.md).
pub fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    // Async exports are not used; without this a small call costs half.
    config.concurrency_support(false);
    config.max_wasm_stack(1 << 20);
    config.memory_init_cow(false);
    config
}

/// The configuration with the pooling allocator: what the runtime uses
/// where the platform lets it reserve the pool, and what the bundled
/// extensions are compiled ahead of time for.
pub fn pooling() -> Config {
    let mut config = base_config();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config()));
    config
}

/// The pooling allocator's limits.
pub fn pooling_config() -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(256);
    pool.total_core_instances(2048);
    pool.total_memories(256);
    pool.total_tables(1024);
    pool.max_memory_size(MAX_MEMORY_BYTES);
    pool
}

/// A short stable name of everything compiled code depends on: wasmtime's
/// version, the configuration and the CPU features the code may use.
pub fn engine_key(engine: &Engine) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The key is what decides whether ahead-of-time code is used: it must
    /// be the same for the same configuration, and differ for another.
    #[test]
    fn the_key_follows_the_configuration() {
        let a = Engine::new(&base_config()).unwrap();
        let b = Engine::new(&base_config()).unwrap();
        assert_eq!(engine_key(&a), engine_key(&b));
        let mut other = base_config();
        other.epoch_interruption(false);
        let c = Engine::new(&other).unwrap();
        assert_ne!(engine_key(&a), engine_key(&c));
    }
}
