//! Per-store resource limits. Going over the memory limit traps with
//! [`MemoryLimitExceeded`], so the runtime can tell it from other traps.

use wasmtime::ResourceLimiter;

/// The error a trap carries when a guest grew past its memory limit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit_bytes} bytes exceeded (asked for {desired_bytes})")]
pub struct MemoryLimitExceeded {
    pub limit_bytes: usize,
    pub desired_bytes: usize,
}

const MAX_TABLE_ELEMENTS: usize = 1 << 20;
const MAX_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

#[derive(Debug, Clone)]
pub struct MemoryLimiter {
    limit_bytes: usize,
}

impl MemoryLimiter {
    pub fn new(limit_mib: u32) -> Self {
        MemoryLimiter {
            limit_bytes: (limit_mib as usize) << 20,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit_bytes {
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit_bytes: self.limit_bytes,
                desired_bytes: desired,
            }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}
