//! `[limits]`: the memory ceiling and per-call deadline the host enforces
//! on each instance, and how many instances a tool may run at once.
//! Ranges are bounded so one extension cannot ask for the whole machine or
//! a call that never times out.

use std::ops::RangeInclusive;

use super::fields::Fields;
use super::kind::Kind;
use super::problems::Problems;

pub const DEFAULT_MEMORY_MIB: u32 = 256;
pub const MEMORY_MIB_RANGE: RangeInclusive<u32> = 1..=4096;
/// One hour: longer calls belong in a background process, not a hook.
pub const TIMEOUT_MS_RANGE: RangeInclusive<u32> = 1..=3_600_000;

/// At most this many instances of one tool; each may use `memory-mib`.
pub const INSTANCES_RANGE: RangeInclusive<u32> = 1..=8;
/// A tool's pool without `instances`: parallel calls of one tool (two
/// `bash` calls in a response, two subagents) run at once.
pub const DEFAULT_TOOL_INSTANCES: u32 = 4;

/// Budgets: CPU per turn (any kind), tokens per session (a provider).
pub const CPU_MS_PER_TURN_RANGE: RangeInclusive<u32> = 1..=3_600_000;
pub const TOKENS_PER_SESSION_RANGE: RangeInclusive<u32> = 1..=u32::MAX;

pub(crate) const KNOWN: &[&str] = &[
    "memory-mib",
    "timeout-ms",
    "instances",
    "cpu-ms-per-turn",
    "tokens-per-session",
];

/// Resource limits for one instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Linear memory ceiling, MiB.
    pub memory_mib: u32,
    /// Deadline of one call into the extension, milliseconds.
    pub timeout_ms: u32,
    /// How many instances may serve calls at once. Only a tool has more
    /// than one: every other kind keeps one instance, because its calls
    /// follow each other (a provider's stream, a hook chain, a UI).
    /// Instances share the host-held state slot, not their memory.
    pub instances: u32,
    /// CPU milliseconds its calls may use in one turn; past it, its calls
    /// in that turn are refused (`cpu-budget`).
    pub cpu_ms_per_turn: Option<u32>,
    /// Tokens (input and output) a provider may spend in one session;
    /// past it, the session's next request is refused (`token-budget`).
    pub tokens_per_session: Option<u32>,
}

impl Limits {
    /// How many instances the pool holds: `instances`, but never more
    /// than fit in the one-instance memory ceiling together, so a pool
    /// cannot take more memory than the largest single instance may.
    pub fn pool_size(&self) -> u32 {
        let fit = MEMORY_MIB_RANGE.end() / self.memory_mib.max(1);
        self.instances.min(fit).max(1)
    }

    /// What an extension of `kind` gets without a `[limits]` table.
    pub fn default_for(kind: Kind) -> Self {
        Self {
            memory_mib: DEFAULT_MEMORY_MIB,
            timeout_ms: kind.default_timeout_ms(),
            instances: match kind {
                Kind::Tool => DEFAULT_TOOL_INSTANCES,
                _ => 1,
            },
            cpu_ms_per_turn: None,
            tokens_per_session: None,
        }
    }
}

/// Reads `[limits]`; `kind` (if known) supplies the default deadline.
pub(crate) fn read_limits(
    fields: Option<Fields<'_>>,
    kind: Option<Kind>,
    p: &mut Problems,
) -> Limits {
    let kind = kind.unwrap_or(Kind::Tool);
    let mut limits = Limits::default_for(kind);
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
    if let Some(v) = bounded(
        &fields,
        "instances",
        INSTANCES_RANGE,
        "instances",
        "instances = 1",
        p,
    ) {
        if v > 1 && kind != Kind::Tool {
            p.push(
                fields.path("instances"),
                format!("a {kind} keeps one instance (its calls follow each other); only a tool may ask for more: remove `instances` or write instances = 1"),
            );
        } else {
            limits.instances = v;
        }
    }
    limits.cpu_ms_per_turn = bounded(
        &fields,
        "cpu-ms-per-turn",
        CPU_MS_PER_TURN_RANGE,
        "milliseconds",
        "cpu-ms-per-turn = 2000",
        p,
    );
    if let Some(v) = bounded(
        &fields,
        "tokens-per-session",
        TOKENS_PER_SESSION_RANGE,
        "tokens",
        "tokens-per-session = 2000000",
        p,
    ) {
        if kind == Kind::Provider {
            limits.tokens_per_session = Some(v);
        } else {
            p.push(
                fields.path("tokens-per-session"),
                format!("only a provider spends tokens; a {kind} cannot have `tokens-per-session`: remove it"),
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_never_takes_more_memory_than_one_instance_may() {
        let mut l = Limits::default_for(Kind::Tool);
        assert_eq!(l.pool_size(), DEFAULT_TOOL_INSTANCES);
        l.instances = 8;
        l.memory_mib = 4096;
        assert_eq!(l.pool_size(), 1);
        l.memory_mib = 1024;
        assert_eq!(l.pool_size(), 4);
        l.memory_mib = 1;
        assert_eq!(l.pool_size(), 8);
    }
}
