//! How many threads may run at once, asked of the system once per process.
//!
//! `std::thread::available_parallelism` reads the process's cgroup files
//! (`/proc/self/cgroup`, the mount table, `cpu.max`) at every call: about
//! 30 µs each here, and a start asked it five times before its first
//! request (issue 42). The answer does not change while a session runs.

use std::sync::OnceLock;

/// The number of cores this process may use (2 when the system cannot say).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cores_is_the_systems_answer() {
        let system = std::thread::available_parallelism().map_or(2, |n| n.get());
        assert_eq!(super::cores(), system);
        assert_eq!(super::cores(), system, "asked again: the kept answer");
    }
}
