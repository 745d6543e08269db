//! Per-store resource limits. Going over the memory limit traps with
//! [`MemoryLimitExceeded`], so the runtime can tell it from other traps.

use wasmtime::ResourceLimiter;

/// The error a trap carries when a guest grew past its memory limit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit_bytes} bytes exceeded (the instance would hold {desired_bytes})")]
pub struct MemoryLimitExceeded {
    pub limit_bytes: usize,
    pub desired_bytes: usize,
}

const MAX_TABLE_ELEMENTS: usize = 1 << 20;
const MAX_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

/// The limit of one store (one instance of an extension) as a whole: the
/// sum of all its linear memories, not each one (a component may have
/// several; per memory, one instance could take `MAX_MEMORIES` times the
/// limit). Memories never shrink, so the running sum is exact.
#[derive(Debug, Clone)]
pub struct MemoryLimiter {
    limit_bytes: usize,
    memory_bytes: usize,
    table_elements: usize,
    /// Where the peak is kept beyond this instance.
    meter: Option<std::sync::Arc<super::meter::Meter>>,
}

impl MemoryLimiter {
    pub fn new(limit_mib: u32) -> Self {
        MemoryLimiter {
            limit_bytes: (limit_mib as usize) << 20,
            memory_bytes: 0,
            table_elements: 0,
            meter: None,
        }
    }

    /// Report each size it grants to `meter` (its peak).
    pub fn metered(mut self, meter: std::sync::Arc<super::meter::Meter>) -> Self {
        self.meter = Some(meter);
        self
    }

    /// Bytes of linear memory the instance holds now.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self
            .memory_bytes
            .saturating_sub(current)
            .saturating_add(desired);
        if total > self.limit_bytes {
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit_bytes: self.limit_bytes,
                desired_bytes: total,
            }));
        }
        self.memory_bytes = total;
        if let Some(m) = &self.meter {
            m.note_memory(total as u64);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self
            .table_elements
            .saturating_sub(current)
            .saturating_add(desired);
        if total > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.table_elements = total;
        Ok(true)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_for_all_memories_together() {
        let mut l = MemoryLimiter::new(4);
        let mib = 1 << 20;
        // Three memories of 1 MiB each, then one grows to 2 MiB: 4 MiB.
        for _ in 0..3 {
            assert!(l.memory_growing(0, mib, None).unwrap());
        }
        assert!(l.memory_growing(mib, 2 * mib, None).unwrap());
        assert_eq!(l.memory_bytes(), 4 * mib);
        // A fourth memory, however small, is over the instance's limit.
        assert!(l.memory_growing(0, 64 * 1024, None).is_err());
        assert!(l.memory_growing(2 * mib, 3 * mib, None).is_err());
        assert_eq!(l.memory_bytes(), 4 * mib);
    }

    #[test]
    fn table_elements_are_bounded_in_total() {
        let mut l = MemoryLimiter::new(1);
        assert!(l.table_growing(0, MAX_TABLE_ELEMENTS - 1, None).unwrap());
        assert!(!l.table_growing(0, 2, None).unwrap());
        assert!(l.table_growing(0, 1, None).unwrap());
    }
}
