//! `[[hooks]]`: where a hook extension attaches. Only `kind = "hook"`
//! registers hooks, and it must register at least one, otherwise it would
//! load and never run.

use std::collections::HashMap;

use toml::Value;

use super::fields::{Fields, as_table};
use super::kind::Kind;
use super::problems::Problems;
use super::slots::{HookKind, HookSlot, SlotRule, attach_points, slot_allows};

pub(crate) const KNOWN: &[&str] = &["slot", "kind", "when-config"];
const EXAMPLE: &str = "[[hooks]] with slot = \"tool-call.pre\" and kind = \"observer\"";

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HookRegistration {
    pub slot: HookSlot,
    pub kind: HookKind,
    /// `when-config`: a top-level key of the extension's config; the hook
    /// attaches only when the config gives that key something to act on.
    /// A hook that runs what the person configured (command-hooks' three
    /// events) then costs nothing where nothing is configured: not even
    /// its code is loaded for it (issue 42).
    pub when_config: Option<String>,
}

impl HookRegistration {
    /// Whether it attaches under `config`. Only a key that is plainly
    /// empty (absent, `null`, `false`, `""`, `[]`, `{}`) leaves it out:
    /// any other value, whatever the extension makes of it, attaches it.
    pub fn attaches_with(&self, config: &serde_json::Value) -> bool {
        super::when_config::admits(self.when_config.as_deref(), config)
    }
}

/// Reads `hooks` from the top-level table. `kind` is the extension kind
/// when known; entries are checked either way so all problems show.
pub(crate) fn read_hooks(
    top: &Fields<'_>,
    kind: Option<Kind>,
    config_schema: Option<&serde_json::Value>,
    p: &mut Problems,
) -> Vec<HookRegistration> {
    let entries = top.array("hooks", EXAMPLE, p);
    let field = top.path("hooks");
    match (kind, entries) {
        (Some(Kind::Hook), None) if top.get("hooks").is_none() => {
            p.push(
                &field,
                format!(
                    "required for kind = \"hook\": register at least one hook; write e.g. {EXAMPLE}"
                ),
            );
        }
        (Some(Kind::Hook), Some([])) => {
            p.push(&field, format!("is empty; kind = \"hook\" extensions register at least one hook; write e.g. {EXAMPLE}"));
        }
        (Some(other), Some(_)) if other != Kind::Hook => {
            p.push(
                &field,
                format!("only kind = \"hook\" extensions register hooks; remove the [[hooks]] entries (this is a kind = \"{other}\" extension)"),
            );
        }
        _ => {}
    }
    let mut out = Vec::new();
    let mut seen: HashMap<(HookSlot, HookKind), usize> = HashMap::new();
    for (i, entry) in entries.unwrap_or_default().iter().enumerate() {
        let at = format!("{field}[{i}]");
        let Some(registration) = read_entry(entry, &at, config_schema, p) else {
            continue;
        };
        if let Some(first) = seen.get(&(registration.slot, registration.kind)) {
            p.push(
                at,
                format!(
                    "duplicates hooks[{first}] ({} {}); register each slot and kind once and remove this entry",
                    registration.slot, registration.kind
                ),
            );
            continue;
        }
        seen.insert((registration.slot, registration.kind), i);
        out.push(registration);
    }
    out
}

fn read_entry(
    entry: &Value,
    at: &str,
    config_schema: Option<&serde_json::Value>,
    p: &mut Problems,
) -> Option<HookRegistration> {
    let table = as_table(
        entry,
        at,
        "{ slot = \"tool-call.pre\", kind = \"observer\" }",
        p,
    )?;
    let fields = Fields::new(table, at);
    let slot = fields
        .required_string("slot", "slot = \"tool-call.pre\"", p)
        .and_then(|text| {
            text.parse::<HookSlot>()
                .map_err(|e| p.push(fields.path("slot"), e.to_string()))
                .ok()
        });
    let kind = fields
        .required_string("kind", "kind = \"observer\"", p)
        .and_then(|text| {
            text.parse::<HookKind>()
                .map_err(|e| p.push(fields.path("kind"), e.to_string()))
                .ok()
        });
    let when_config = fields
        .string("when-config", "when-config = \"PreToolUse\"", p)
        .and_then(|key| {
            super::when_config::read_when_config(
                key,
                &fields.path("when-config"),
                "when-config",
                config_schema,
                p,
            )
        });
    fields.unknown_keys(KNOWN, p);
    let (slot, kind) = (slot?, kind?);
    if slot_allows(slot, kind) == SlotRule::Forbidden {
        p.push(
            fields.path("kind"),
            format!(
                "a {kind} cannot attach at {slot}; {kind}s may attach at: {}; move it to one of those slots or use kind = \"observer\"",
                attach_points(kind)
            ),
        );
        return None;
    }
    Some(HookRegistration {
        slot,
        kind,
        when_config,
    })
}
