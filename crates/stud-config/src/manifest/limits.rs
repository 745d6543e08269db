//! `[limits]`: the memory ceiling and per-call deadline the host enforces
//! on each instance. Ranges are bounded so one extension cannot ask for
//! the whole machine or a call that never times out.

use std::ops::RangeInclusive;

use super::fields::Fields;
use super::kind::Kind;
use super::problems::Problems;

pub const DEFAULT_MEMORY_MIB: u32 = 256;
pub const MEMORY_MIB_RANGE: RangeInclusive<u32> = 1..=4096;
/// One hour: longer calls belong in a background process, not a hook.
pub const TIMEOUT_MS_RANGE: RangeInclusive<u32> = 1..=3_600_000;

pub(crate) const KNOWN: &[&str] = &["memory-mib", "timeout-ms"];

/// Resource limits for one instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Linear memory ceiling, MiB.
    pub memory_mib: u32,
    /// Deadline of one call into the extension, milliseconds.
    pub timeout_ms: u32,
}

impl Limits {
    /// What an extension of `kind` gets without a `[limits]` table.
    pub fn default_for(kind: Kind) -> Self {
        Self {
            memory_mib: DEFAULT_MEMORY_MIB,
            timeout_ms: kind.default_timeout_ms(),
        }
    }
}

/// Reads `[limits]`; `kind` (if known) supplies the default deadline.
pub(crate) fn read_limits(
    fields: Option<Fields<'_>>,
    kind: Option<Kind>,
    p: &mut Problems,
) -> Limits {
    let mut limits = Limits::default_for(kind.unwrap_or(Kind::Tool));
    let Some(fields) = fields else {
        return limits;
    };
    if let Some(v) = bounded(
        &fields,
        "memory-mib",
        MEMORY_MIB_RANGE,
        "MiB",
        "memory-mib = 256",
        p,
    ) {
        limits.memory_mib = v;
    }
    if let Some(v) = bounded(
        &fields,
        "timeout-ms",
        TIMEOUT_MS_RANGE,
        "milliseconds",
        "timeout-ms = 120000",
        p,
    ) {
        limits.timeout_ms = v;
    }
    fields.unknown_keys(KNOWN, p);
    limits
}

fn bounded(
    fields: &Fields<'_>,
    key: &str,
    range: RangeInclusive<u32>,
    unit: &str,
    example: &str,
    p: &mut Problems,
) -> Option<u32> {
    let value = fields.integer(key, example, p)?;
    match u32::try_from(value) {
        Ok(v) if range.contains(&v) => Some(v),
        _ => {
            let (lo, hi) = (range.start(), range.end());
            p.push(fields.path(key), format!("{value} is out of range; write a whole number of {unit} from {lo} to {hi}, e.g. {example}"));
            None
        }
    }
}
