//! Per-extension metering at the session's level: every extension the
//! session loaded, its per-turn CPU count restarted when a turn opens
//! (the `cpu-ms-per-turn` budget), one `extension.metered` event per
//! extension that was called during the turn when it ends, and the
//! figures kept in the session's manifest for `stud session show
//! --stats`. The counting itself is the runtime's (`runtime::meter`).

use std::collections::BTreeMap;
use std::sync::Arc;

use stud_protocol::events::KernelEvent;
use stud_protocol::session_manifest::MeteredExtension;

use crate::runtime::Extension;

/// The session's extensions and what was last reported of each.
#[derive(Default)]
pub struct Metering {
    members: Vec<Arc<Extension>>,
    /// Calls, CPU and host ms, network bytes as last reported (per id).
    reported: BTreeMap<String, (u64, f64, f64, u64, u64)>,
    /// Tokens and cost per provider id, this session.
    provider_spend: BTreeMap<String, (u64, f64)>,
    /// The figures of the processes that ran the session before this one
    /// (a resumed session), added to this one's.
    earlier: Vec<MeteredExtension>,
}

impl Metering {
    pub fn new(members: &[Arc<Extension>]) -> Self {
        Metering {
            members: members.to_vec(),
            reported: BTreeMap::new(),
            provider_spend: BTreeMap::new(),
            earlier: Vec::new(),
        }
    }

    /// A resumed session: what it cost before counts on (a provider's
    /// tokens toward its `tokens-per-session` too).
    pub fn resume(&mut self, earlier: Vec<MeteredExtension>) {
        for e in &earlier {
            if e.tokens > 0 {
                let spend = self.provider_spend.entry(e.id.clone()).or_default();
                spend.0 += e.tokens;
                spend.1 += e.cost_usd;
            }
        }
        self.earlier = earlier;
    }

    /// A reloaded extension takes the place of its old version (whose
    /// figures stay in the old one's count: the new version starts at 0).
    pub fn replace(&mut self, ext: &Arc<Extension>) {
        match self.members.iter_mut().find(|m| m.id() == ext.id()) {
            Some(m) => *m = ext.clone(),
            None => self.members.push(ext.clone()),
        }
        self.reported.remove(ext.id().as_str());
    }

    /// An extension loaded after the start (a command at its first use)
    /// is metered from then on.
    pub fn join(&mut self, ext: &Arc<Extension>) {
        if !self.members.iter().any(|m| Arc::ptr_eq(m, ext)) {
            self.members.push(ext.clone());
        }
    }

    pub fn turn_started(&self) {
        for m in &self.members {
            m.meter().turn_started();
        }
    }

    /// The turn's figures per extension called during it; `provider` (its
    /// id) gets the turn's `tokens` and `cost_usd`.
    pub fn turn_ended(&mut self, provider: &str, tokens: u64, cost_usd: f64) -> Vec<KernelEvent> {
        let spend = self.provider_spend.entry(provider.to_string()).or_default();
        spend.0 += tokens;
        spend.1 += cost_usd;
        let mut out = Vec::new();
        for m in &self.members {
            let h = m.health();
            let now = (
                h.calls,
                h.metered.cpu_ms,
                h.metered.host_ms,
                h.metered.net_bytes_sent,
                h.metered.net_bytes_received,
            );
            let id = m.id().to_string();
            let before = self.reported.insert(id.clone(), now).unwrap_or_default();
            if now.0 == before.0 {
                continue;
            }
            let is_provider = id == provider;
            out.push(KernelEvent::ExtensionMetered {
                id,
                calls: now.0 - before.0,
                cpu_ms: round(now.1 - before.1),
                host_ms: round(now.2 - before.2),
                peak_memory_bytes: h.metered.peak_memory_bytes,
                net_bytes_sent: now.3 - before.3,
                net_bytes_received: now.4 - before.4,
                tokens: if is_provider { tokens } else { 0 },
                cost_usd: if is_provider { cost_usd } else { 0.0 },
            });
        }
        out
    }

    /// Tokens provider `id` spent in this session.
    pub fn provider_tokens(&self, id: &str) -> u64 {
        self.provider_spend.get(id).map_or(0, |s| s.0)
    }

    /// Every extension's figures for the session so far (earlier
    /// processes' included), for its manifest.
    pub fn totals(&self) -> Vec<MeteredExtension> {
        let mut rows: BTreeMap<String, MeteredExtension> = self
            .earlier
            .iter()
            .map(|e| {
                (
                    e.id.clone(),
                    MeteredExtension {
                        tokens: 0,
                        cost_usd: 0.0,
                        ..e.clone()
                    },
                )
            })
            .collect();
        for m in &self.members {
            let h = m.health();
            if h.calls == 0 {
                continue;
            }
            let id = m.id().to_string();
            let row = rows.entry(id.clone()).or_insert_with(|| MeteredExtension {
                id,
                kind: m.manifest.kind.to_string(),
                ..Default::default()
            });
            row.calls += h.calls;
            row.failures += h.failures;
            row.cpu_ms = round(row.cpu_ms + h.metered.cpu_ms);
            row.host_ms = round(row.host_ms + h.metered.host_ms);
            row.peak_memory_bytes = row.peak_memory_bytes.max(h.metered.peak_memory_bytes);
            row.net_bytes_sent += h.metered.net_bytes_sent;
            row.net_bytes_received += h.metered.net_bytes_received;
        }
        for (id, (tokens, cost)) in &self.provider_spend {
            if let Some(row) = rows.get_mut(id) {
                row.tokens = *tokens;
                row.cost_usd = *cost;
            }
        }
        rows.into_values().collect()
    }
}

fn round(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}
