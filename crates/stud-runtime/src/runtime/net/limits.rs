//! What one response from a server may cost: how long it may take to
//! start (headers), how long in all, and how many bytes it may bring. A
//! hostile or broken endpoint (one that accepts and never answers, one that
//! trickles a byte at a time forever, one that streams without end) fails
//! the request with a typed error instead of holding the session or
//! growing memory.

use std::time::Duration;

/// Settings `runtime.network.*`, with their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetLimits {
    /// From sending the request to the response's headers.
    pub header_timeout: Duration,
    /// From sending the request to the body's last byte.
    pub response_timeout: Duration,
    /// Bytes of body one response may bring.
    pub max_response_bytes: u64,
}

/// Two minutes: a model server answers with headers before it generates.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(120);
/// Thirty minutes: a long answer with thinking takes minutes, not hours.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// 64 MiB: far above any model answer, far below what hurts.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 << 20;

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}
