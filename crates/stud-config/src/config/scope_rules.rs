//! Which scope may set which settings key: one table ([`RULES`]), applied
//! in one place ([`apply`]) to a project's settings before they are merged
//! over the user's. A test walks every key the settings types accept and
//! fails on one without a rule, so a new key cannot slip in unruled.
//!
//! A project is a repository someone else wrote. It may tune what is its
//! business (model, prompts, tool settings), make things stricter, and ask
//! for grants the user then reviews; it may never loosen a limit, choose
//! who answers approvals, or decide what counts as a signature.

use serde_json::Value;

use super::layers::BY_ID;

/// What a project's value of a key may do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScopeRule {
    /// Any scope sets it; the project's value wins.
    Free,
    /// A project's value counts only when it is stricter than the user's
    /// (or, unset, the default); a looser one is ignored with a warning.
    Tighten(Stricter),
    /// A project's value counts only once the user accepted it in the
    /// project's trust review (`extensions::review`); until then the
    /// user's value stays.
    Reviewed,
    /// A project's entry is asked about before it is used, by a trust list
    /// of its own (MCP servers: `mcp::trust`).
    AskedBeforeUse,
    /// Only the user's global settings set it; a project's value is
    /// ignored with a warning.
    GlobalOnly,
}

/// What "stricter" means for a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stricter {
    /// A smaller number is stricter; `default` is the value when the user
    /// set none (`None`: no limit, so any value is stricter).
    Lower { default: Option<f64> },
    /// `ask` > `allowlist` > `yolo`.
    Mode,
    /// `false` is stricter (a feature switched off).
    Off,
    /// A list a project may only add to (merged as a union).
    Added,
}

/// Every settings key, as a dotted path where `*` stands for one map key
/// (an extension id, a model, a profile name). A key without an entry of
/// its own takes the rule of the longest entry it lies under.
pub const RULES: &[(&str, ScopeRule)] = {
    use ScopeRule::*;
    use Stricter::*;
    &[
        ("$comment", Free),
        ("securityMode.mode", Tighten(Mode)),
        ("securityMode.allowlist", Reviewed),
        (
            "runtime.continuation.maxIterations",
            Tighten(Lower {
                default: Some(50.0),
            }),
        ),
        ("runtime.toolParallelism", Free),
        ("runtime.interactionTimeoutMs", Free),
        (
            "runtime.toolOutputLimit",
            Tighten(Lower {
                default: Some(65536.0),
            }),
        ),
        (
            "runtime.retries.maxRetries",
            Tighten(Lower { default: Some(4.0) }),
        ),
        ("runtime.retries.baseDelayMs", Free),
        ("runtime.retries.maxDelayMs", Free),
        ("runtime.processSandbox", GlobalOnly),
        (
            "runtime.network.headerTimeoutMs",
            Tighten(Lower {
                default: Some(120_000.0),
            }),
        ),
        (
            "runtime.network.responseTimeoutMs",
            Tighten(Lower {
                default: Some(1_800_000.0),
            }),
        ),
        (
            "runtime.network.maxResponseBytes",
            Tighten(Lower {
                default: Some(67_108_864.0),
            }),
        ),
        (
            "runtime.responseLimits.textBytes",
            Tighten(Lower {
                default: Some(4_194_304.0),
            }),
        ),
        (
            "runtime.responseLimits.thinkingBytes",
            Tighten(Lower {
                default: Some(4_194_304.0),
            }),
        ),
        (
            "runtime.responseLimits.toolArgumentBytes",
            Tighten(Lower {
                default: Some(4_194_304.0),
            }),
        ),
        ("active.provider", Free),
        ("active.model", Free),
        ("active.maxTokens", Free),
        ("active.temperature", Free),
        ("active.thinking", Free),
        ("active.cacheHints", Free),
        ("active.sessionStore", GlobalOnly),
        ("active.interactor", GlobalOnly),
        ("active.stateMachine", GlobalOnly),
        ("systemPrompt", Free),
        ("providers.*", Free),
        ("providers.*.baseUrl", Reviewed),
        ("tools.*", Free),
        ("hooks.*", Reviewed),
        // Reading a project's .claude/settings.json hooks is the user's call.
        ("hooks.*.claudeSettings", GlobalOnly),
        ("ui.*", Free),
        ("loggers.*", Reviewed),
        ("contextProviders.*", Reviewed),
        ("commands.*", Free),
        ("commands.*.enabled", GlobalOnly),
        ("commands.*.alias", GlobalOnly),
        ("sessionStores.*", Free),
        // Where sessions go, and the host and port it grants: the person's.
        ("sessionStores.*.url", GlobalOnly),
        ("active.sessionStoreFallback", GlobalOnly),
        ("stateMachines.*", GlobalOnly),
        ("ordering.hooks", Free),
        ("network.*", Reviewed),
        // A socket grant opens internal addresses: only the person's own.
        ("sockets", GlobalOnly),
        ("secrets", GlobalOnly),
        ("pricing", GlobalOnly),
        ("budget.maxCostUsd", Tighten(Lower { default: None })),
        (
            "budget.extensions.*.cpuMsPerTurn",
            Tighten(Lower { default: None }),
        ),
        (
            "budget.extensions.*.tokensPerSession",
            Tighten(Lower { default: None }),
        ),
        ("agents.enabled", Tighten(Off)),
        ("agents.maxDepth", Tighten(Lower { default: Some(2.0) })),
        ("agents.budgetShare", Tighten(Lower { default: Some(0.5) })),
        (
            "agents.maxIterations",
            Tighten(Lower {
                default: Some(25.0),
            }),
        ),
        ("trustedPublishers", GlobalOnly),
        ("signaturePolicy", GlobalOnly),
        ("extensionIndexes", GlobalOnly),
        ("compaction.warnAt", Free),
        ("compaction.compactAt", Free),
        ("compaction.keepRecent", Free),
        // A cloned project does not make the person's terminal ring.
        ("notifications.via", GlobalOnly),
        ("notifications.afterSeconds", GlobalOnly),
        // Undo is the person's safety net: a cloned project cannot take
        // it away or make every snapshot huge.
        ("checkpoints.enabled", GlobalOnly),
        ("checkpoints.includeIgnored", GlobalOnly),
        ("checkpoints.maxFileMiB", GlobalOnly),
        ("checkpoints.maxSnapshotMiB", GlobalOnly),
        ("checkpoints.keepDays", GlobalOnly),
        ("checkpoints.gitCommits", GlobalOnly),
        ("mcpServers.*", AskedBeforeUse),
        ("profiles", GlobalOnly),
        ("protectedPaths.patterns", Tighten(Added)),
        ("protectedPaths.allow", GlobalOnly),
    ]
};

impl ScopeRule {
    /// The rule in words, for `docs/settings.md`.
    pub fn describe(self) -> String {
        match self {
            ScopeRule::Free => "free: a project's value wins".into(),
            ScopeRule::Tighten(Stricter::Lower { default: Some(d) }) => format!(
                "project may only lower it (below the user's value, else {})",
                number(d)
            ),
            ScopeRule::Tighten(Stricter::Lower { default: None }) => {
                "project may only lower it (any value when the user set none)".into()
            }
            ScopeRule::Tighten(Stricter::Mode) => {
                "project may only make it stricter (ask > allowlist > yolo)".into()
            }
            ScopeRule::Tighten(Stricter::Off) => "project may only switch it off".into(),
            ScopeRule::Tighten(Stricter::Added) => "project may only add entries".into(),
            ScopeRule::Reviewed => "project's value only once accepted in its trust review".into(),
            ScopeRule::AskedBeforeUse => {
                "project's entries are asked about before first use (`stud mcp trust`)".into()
            }
            ScopeRule::GlobalOnly => "**global only**: a project's value is ignored".into(),
        }
    }
}

/// The table of [`RULES`] as `docs/settings.md` shows it.
pub fn markdown_table() -> String {
    let mut out = String::from("| key | what a project's value may do |\n|---|---|\n");
    for (key, rule) in RULES {
        out.push_str(&format!("| `{key}` | {} |\n", rule.describe()));
    }
    out
}

/// Whether `pattern` (dotted, `*` for one segment) names exactly `path`.
fn names(pattern: &str, path: &[&str]) -> bool {
    let parts: Vec<&str> = pattern.split('.').collect();
    parts.len() == path.len() && parts.iter().zip(path).all(|(p, k)| *p == "*" || p == k)
}

/// The rule of the key at `path`: its own entry, else that of the longest
/// entry it lies under.
pub fn rule_for(path: &[&str]) -> Option<ScopeRule> {
    (1..=path.len())
        .rev()
        .find_map(|n| RULES.iter().find(|(p, _)| names(p, &path[..n])))
        .map(|(_, r)| *r)
}

/// What applying the rules to a project's settings did.
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    /// One line per value ignored for good (global-only, looser).
    pub ignored: Vec<String>,
    /// Reviewed keys left out because the user has not accepted them.
    pub unaccepted: Vec<String>,
}

/// Apply [`RULES`] to `project` (a project settings document) against
/// `global` (the user's): what a project may not set is removed (the
/// user's value stays), and reviewed keys are kept only when `accepted`.
pub fn apply(project: &mut Value, global: &Value, accepted: bool) -> Applied {
    let mut out = Applied::default();
    walk(project, global, &mut Vec::new(), accepted, &mut out);
    out
}

fn walk(
    node: &mut Value,
    global: &Value,
    path: &mut Vec<String>,
    accepted: bool,
    out: &mut Applied,
) {
    let Value::Object(map) = node else { return };
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        path.push(key.clone());
        let at: Vec<&str> = path.iter().map(String::as_str).collect();
        let own = RULES.iter().find(|(p, _)| names(p, &at)).map(|(_, r)| *r);
        let dotted = at.join(".");
        let theirs = global_at(global, &at);
        let keep = match own {
            Some(ScopeRule::GlobalOnly) => {
                out.ignored.push(format!(
                    "{dotted} is only read from the global settings (~/.stud/settings.json); the project's value is ignored"
                ));
                false
            }
            Some(ScopeRule::Reviewed) if !accepted => {
                out.unaccepted.push(dotted.clone());
                false
            }
            Some(ScopeRule::Tighten(s)) => match map.get(&key) {
                Some(value) => match looser(s, value, theirs) {
                    Some(why) => {
                        out.ignored.push(format!("{dotted} {why}"));
                        false
                    }
                    None => true,
                },
                None => true,
            },
            _ => true,
        };
        if !keep {
            // The user's value stays. Inside an entry of a map merged by
            // id the project's entry replaces the user's whole, so the
            // user's value is put back there; elsewhere leaving the key
            // out keeps it.
            let inside_entry = at.len() > 2 && BY_ID.contains(&at[0]);
            match theirs {
                Some(v) if inside_entry => {
                    map.insert(key.clone(), v.clone());
                }
                _ => {
                    map.remove(&key);
                }
            }
        } else if let Some(child) = map.get_mut(&key) {
            let entry = path.len() == 2 && BY_ID.contains(&path[0].as_str());
            walk(child, global, path, accepted, out);
            if entry {
                let at: Vec<&str> = path.iter().map(String::as_str).collect();
                keep_global_only(child, global_at(global, &at), &at);
            }
        }
        path.pop();
    }
    drop_empty(map);
}

/// A project's entry of a map merged by id replaces the user's whole, so
/// leaving a global-only key out (or `"disable": true`, which drops the
/// entry) would drop the user's value of it (`commands.<id>.enabled`):
/// the user's global-only values are carried into the project's entry.
fn keep_global_only(entry: &mut Value, theirs: Option<&Value>, at: &[&str]) {
    let (Value::Object(entry), Some(Value::Object(theirs))) = (entry, theirs) else {
        return;
    };
    let mut kept = false;
    for (key, value) in theirs {
        let path = [at[0], at[1], key.as_str()];
        let global_only = RULES
            .iter()
            .any(|(p, r)| *r == ScopeRule::GlobalOnly && names(p, &path));
        if !global_only {
            continue;
        }
        // Carried in, or already put back by the walk (the project named
        // the key too): either way the entry holds a value of the user's,
        // and the project's `disable` must not drop it.
        if !entry.contains_key(key) {
            entry.insert(key.clone(), value.clone());
        }
        kept = true;
    }
    if kept {
        entry.remove("disable");
    }
}

/// `securityMode: {}` left behind would not parse (it needs a mode); other
/// emptied objects mean nothing either.
fn drop_empty(map: &mut serde_json::Map<String, Value>) {
    map.retain(|k, v| !(k == "securityMode" && v.as_object().is_some_and(|o| o.is_empty())));
}

fn global_at<'v>(global: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(global, |v, k| v.get(*k))
}

/// Why `value` is looser than the user's (`theirs`, else the default),
/// or `None` when it may stand.
fn looser(s: Stricter, value: &Value, theirs: Option<&Value>) -> Option<String> {
    match s {
        Stricter::Added => None,
        Stricter::Lower { default } => {
            let limit = theirs.and_then(Value::as_f64).or(default)?;
            let asked = value.as_f64()?;
            (asked > limit).then(|| {
                format!(
                    "{value} is ignored: a project may only lower this limit ({} stays)",
                    number(limit)
                )
            })
        }
        Stricter::Off => {
            let on = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(true);
            (value.as_bool() == Some(true) && !on(theirs)).then(|| {
                "`true` is ignored: a project cannot switch on what the user switched off"
                    .to_string()
            })
        }
        Stricter::Mode => {
            use crate::mode::Mode;
            let asked: Mode = value.as_str()?.parse().ok()?;
            let kept: Mode = theirs
                .and_then(Value::as_str)
                .and_then(|m| m.parse().ok())
                .unwrap_or(Mode::Ask);
            asked.is_looser_than(kept).then(|| {
                format!(
                    "`{asked}` is ignored: a project can only make approvals stricter (ask > allowlist > yolo; `{kept}` stays)"
                )
            })
        }
    }
}

fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_key_of_the_settings_has_a_rule() {
        let keys = trace::settings_keys();
        assert!(keys.len() > 40, "the tracer found too few keys: {keys:?}");
        let missing: Vec<&String> = keys
            .iter()
            .filter(|k| rule_for(&k.split('.').collect::<Vec<_>>()).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "settings keys without a scope rule (add them to config::scope_rules::RULES): {missing:?}"
        );
    }

    #[test]
    fn every_rule_names_a_key_the_settings_have() {
        let keys = trace::settings_keys();
        for (pattern, _) in RULES {
            let parts: Vec<&str> = pattern.split('.').collect();
            let known = keys.iter().any(|k| {
                let key: Vec<&str> = k.split('.').collect();
                // The rule names the key, a part of it, or something inside
                // an opaque value (an extension's own config).
                let n = key.len().min(parts.len());
                key[..n] == parts[..n]
            });
            assert!(known, "rule `{pattern}` names no settings key");
        }
    }

    /// `docs/settings.md` shows the table as it is (`UPDATE_GOLDEN=1`
    /// rewrites it).
    #[test]
    fn the_docs_show_every_rule() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/settings.md"
        ));
        let doc = std::fs::read_to_string(path).expect("docs/settings.md");
        let (start, end) = ("<!-- scope-rules:start -->\n", "<!-- scope-rules:end -->");
        let (Some(a), Some(b)) = (doc.find(start), doc.find(end)) else {
            panic!("docs/settings.md has no {start:?} ... {end:?} section");
        };
        let shown = &doc[a + start.len()..b];
        let table = markdown_table();
        if shown != table && std::env::var_os("UPDATE_GOLDEN").is_some() {
            let updated = format!("{}{table}{}", &doc[..a + start.len()], &doc[b..]);
            std::fs::write(path, updated).expect("write docs/settings.md");
            return;
        }
        assert_eq!(
            shown, table,
            "docs/settings.md is stale; run with UPDATE_GOLDEN=1"
        );
    }

    #[test]
    fn a_project_may_tighten_but_not_loosen() {
        let global = json!({"runtime": {"responseLimits": {"textBytes": 1000}}, "agents": {"enabled": false}});
        let mut project = json!({
            "runtime": {"responseLimits": {"textBytes": 5000, "thinkingBytes": 10}, "network": {"maxResponseBytes": 999_999_999_999u64}},
            "agents": {"maxDepth": 5, "enabled": true, "budgetShare": 0.1},
            "budget": {"maxCostUsd": 1000},
            "securityMode": {"mode": "yolo"},
            "pricing": {"m": {"input": 0}},
            "protectedPaths": {"patterns": ["x"], "allow": [".env"]},
            "active": {"model": "m"}
        });
        let applied = apply(&mut project, &global, true);
        assert_eq!(
            project,
            json!({
                "runtime": {"responseLimits": {"thinkingBytes": 10}, "network": {}},
                "agents": {"budgetShare": 0.1},
                "budget": {"maxCostUsd": 1000},
                "protectedPaths": {"patterns": ["x"]},
                "active": {"model": "m"}
            })
        );
        assert_eq!(applied.ignored.len(), 7, "{:?}", applied.ignored);
        assert!(applied.unaccepted.is_empty());
    }

    #[test]
    fn reviewed_keys_wait_for_acceptance_and_keep_the_users_value() {
        let global =
            json!({"providers": {"p": {"baseUrl": "https://mine"}}, "hooks": {"h": {"a": 1}}});
        let mut project = json!({
            "providers": {"p": {"baseUrl": "https://theirs", "model": "x"}},
            "hooks": {"h": {"a": 2}, "new": {}},
            "securityMode": {"allowlist": ["bash"]},
            "mcpServers": {"s": {"command": "x"}}
        });
        let applied = apply(&mut project, &global, false);
        assert_eq!(
            project,
            json!({
                "providers": {"p": {"baseUrl": "https://mine", "model": "x"}},
                "hooks": {},
                "mcpServers": {"s": {"command": "x"}}
            })
        );
        let mut unaccepted = applied.unaccepted.clone();
        unaccepted.sort();
        assert_eq!(
            unaccepted,
            [
                "hooks.h",
                "hooks.new",
                "providers.p.baseUrl",
                "securityMode.allowlist"
            ]
        );
        let mut again = json!({"hooks": {"h": {"a": 2}}});
        assert_eq!(apply(&mut again, &global, true), Applied::default());
        assert_eq!(again, json!({"hooks": {"h": {"a": 2}}}));
    }

    #[test]
    fn a_project_entry_cannot_drop_the_users_global_only_keys() {
        let global = json!({"commands": {
            "trust": {"enabled": false},
            "model": {"alias": ["/m"], "x": 1},
            "cost": {"y": 2}
        }});
        let mut project = json!({"commands": {
            "trust": {"disable": true},
            "model": {"x": 3, "alias": ["/mode"]},
            "cost": {"disable": true},
            "mine": {"enabled": false}
        }});
        let applied = apply(&mut project, &global, true);
        assert_eq!(
            project,
            json!({"commands": {
                "trust": {"enabled": false},
                "model": {"x": 3, "alias": ["/m"]},
                "cost": {"disable": true},
                "mine": {}
            }})
        );
        assert_eq!(applied.ignored.len(), 2, "{:?}", applied.ignored);
    }

    /// A project that names the global-only key itself (so the walk puts
    /// the user's value back) and `disable`s the entry still cannot drop
    /// it: the person's session store stays configured.
    #[test]
    fn disable_next_to_a_global_only_key_the_project_names_drops_nothing() {
        let global = json!({"sessionStores": {"postgres": {"url": "postgres://stud@db/team"}}});
        let mut project = json!({"sessionStores": {"postgres": {"disable": true, "url": "x"}}});
        apply(&mut project, &global, true);
        assert_eq!(
            project,
            json!({"sessionStores": {"postgres": {"url": "postgres://stud@db/team"}}})
        );
    }

    /// Every key the settings types accept, found by deserializing
    /// `Settings` from a tracer that offers each struct all its fields.
    mod trace {
        use std::cell::RefCell;
        use std::collections::BTreeSet;

        use serde::Deserialize;
        use serde::de::{
            self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
            VariantAccess, Visitor,
        };

        type Error = de::value::Error;

        pub fn settings_keys() -> BTreeSet<String> {
            let keys = RefCell::new(BTreeSet::new());
            let tracer = Tracer {
                path: Vec::new(),
                keys: &keys,
            };
            crate::config::Settings::deserialize(tracer).expect("trace the settings types");
            keys.into_inner()
        }

        #[derive(Clone)]
        struct Tracer<'k> {
            path: Vec<String>,
            keys: &'k RefCell<BTreeSet<String>>,
        }

        impl Tracer<'_> {
            fn leaf(&self) {
                if !self.path.is_empty() {
                    self.keys.borrow_mut().insert(self.path.join("."));
                }
            }

            fn at(&self, key: &str) -> Self {
                let mut t = self.clone();
                t.path.push(key.to_string());
                t
            }
        }

        macro_rules! leaf_with {
            ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {$(
                fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
                    self.leaf();
                    v.$visit($($value)?)
                }
            )*};
        }

        impl<'de> de::Deserializer<'de> for Tracer<'_> {
            type Error = Error;

            leaf_with! {
                deserialize_any => visit_unit(),
                deserialize_bool => visit_bool(false),
                deserialize_i8 => visit_i8(0),
                deserialize_i16 => visit_i16(0),
                deserialize_i32 => visit_i32(0),
                deserialize_i64 => visit_i64(0),
                deserialize_u8 => visit_u8(0),
                deserialize_u16 => visit_u16(0),
                deserialize_u32 => visit_u32(0),
                deserialize_u64 => visit_u64(0),
                deserialize_f32 => visit_f32(0.0),
                deserialize_f64 => visit_f64(0.0),
                deserialize_char => visit_char('x'),
                deserialize_str => visit_str(""),
                deserialize_string => visit_string(String::new()),
                deserialize_bytes => visit_bytes(&[]),
                deserialize_byte_buf => visit_byte_buf(Vec::new()),
                deserialize_unit => visit_unit(),
                deserialize_identifier => visit_str(""),
                deserialize_ignored_any => visit_unit(),
            }

            fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
                v.visit_some(self)
            }

            fn deserialize_unit_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                v: V,
            ) -> Result<V::Value, Error> {
                self.leaf();
                v.visit_unit()
            }

            fn deserialize_newtype_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                v: V,
            ) -> Result<V::Value, Error> {
                v.visit_newtype_struct(self)
            }

            fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
                self.leaf();
                v.visit_seq(Empty)
            }

            fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Error> {
                self.deserialize_seq(v)
            }

            fn deserialize_tuple_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                _: usize,
                v: V,
            ) -> Result<V::Value, Error> {
                self.deserialize_seq(v)
            }

            fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
                v.visit_map(Entries {
                    keys: vec!["*"],
                    tracer: self,
                })
            }

            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                v: V,
            ) -> Result<V::Value, Error> {
                v.visit_map(Entries {
                    keys: fields.to_vec(),
                    tracer: self,
                })
            }

            fn deserialize_enum<V: Visitor<'de>>(
                self,
                _: &'static str,
                variants: &'static [&'static str],
                v: V,
            ) -> Result<V::Value, Error> {
                self.leaf();
                v.visit_enum(FirstVariant {
                    name: variants.first().copied().unwrap_or_default(),
                    tracer: self,
                })
            }
        }

        struct Empty;

        impl<'de> SeqAccess<'de> for Empty {
            type Error = Error;
            fn next_element_seed<T: DeserializeSeed<'de>>(
                &mut self,
                _: T,
            ) -> Result<Option<T::Value>, Error> {
                Ok(None)
            }
        }

        /// A map with these keys, each value traced below its key.
        struct Entries<'k> {
            keys: Vec<&'static str>,
            tracer: Tracer<'k>,
        }

        impl<'de> MapAccess<'de> for Entries<'_> {
            type Error = Error;

            fn next_key_seed<K: DeserializeSeed<'de>>(
                &mut self,
                seed: K,
            ) -> Result<Option<K::Value>, Error> {
                match self.keys.first() {
                    Some(k) => seed.deserialize((*k).into_deserializer()).map(Some),
                    None => Ok(None),
                }
            }

            fn next_value_seed<V: DeserializeSeed<'de>>(
                &mut self,
                seed: V,
            ) -> Result<V::Value, Error> {
                let key = self.keys.remove(0);
                seed.deserialize(self.tracer.at(key))
            }
        }

        /// An enum as its first variant; the key is a leaf.
        struct FirstVariant<'k> {
            name: &'static str,
            tracer: Tracer<'k>,
        }

        impl<'de, 'k> EnumAccess<'de> for FirstVariant<'k> {
            type Error = Error;
            type Variant = Tracer<'k>;

            fn variant_seed<V: DeserializeSeed<'de>>(
                self,
                seed: V,
            ) -> Result<(V::Value, Tracer<'k>), Error> {
                let name = seed.deserialize(self.name.into_deserializer())?;
                Ok((name, self.tracer))
            }
        }

        impl<'de> VariantAccess<'de> for Tracer<'_> {
            type Error = Error;

            fn unit_variant(self) -> Result<(), Error> {
                Ok(())
            }

            fn newtype_variant_seed<T: DeserializeSeed<'de>>(
                self,
                seed: T,
            ) -> Result<T::Value, Error> {
                seed.deserialize(Tracer {
                    path: Vec::new(),
                    keys: self.keys,
                })
            }

            fn tuple_variant<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Error> {
                v.visit_seq(Empty)
            }

            fn struct_variant<V: Visitor<'de>>(
                self,
                _: &'static [&'static str],
                v: V,
            ) -> Result<V::Value, Error> {
                v.visit_seq(Empty)
            }
        }
    }
}
