//! Which command a typed name means. Built from the manifests discovery
//! found (nothing is instantiated) and the user's `commands.<id>` settings:
//! `enabled = false` drops a command, `alias = ["m"]` adds names. A name
//! declared twice in one scope is a load error for both (neither is
//! clearly meant); across the user's scopes the higher one shadows (a
//! global command may replace a bundled one: the user's choice). A
//! project's command never takes the name or alias of one of the user's
//! (bundled or global) commands: a repository could otherwise answer
//! `/mode` or `/trust` with a made-up status. It is refused with a warning
//! naming its folder, and the user's command answers.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::extensions::{Discovered, Scope};
use crate::manifest::{CommandName, Kind};

/// Keys of `commands.<id>` that the kernel reads; they are not part of
/// the extension's config.
pub const KERNEL_KEYS: [&str; 2] = ["enabled", "alias"];

/// A command that can be dispatched.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: CommandName,
    pub aliases: Vec<CommandName>,
    pub description: String,
    pub argument_hint: Option<String>,
    pub turn_safe: bool,
    pub scope: Scope,
    pub found: Discovered,
}

impl Entry {
    pub fn id(&self) -> &str {
        self.found.manifest.id.as_str()
    }
}

/// What a typed name resolves to.
pub enum Resolved<'a> {
    One(&'a Entry),
    /// Several commands answer to it (an alias collides): the person picks.
    Ambiguous(Vec<&'a Entry>),
    /// Nothing: the closest names, best first.
    Unknown {
        suggestions: Vec<String>,
    },
}

#[derive(Debug, Default, Clone)]
pub struct Catalogue {
    /// Winners only, sorted by name.
    entries: Vec<Entry>,
}

impl Catalogue {
    /// The catalogue, and a warning for each command left out.
    pub fn build(
        found: &[Discovered],
        settings: &HashMap<String, Value>,
    ) -> (Catalogue, Vec<String>) {
        let mut warnings = Vec::new();
        let users = users_names(found, settings);
        let mut by_name: BTreeMap<CommandName, Vec<Entry>> = BTreeMap::new();
        for d in found {
            let (Kind::Command, Some(decl)) = (d.manifest.kind, &d.manifest.command) else {
                continue;
            };
            let id = d.manifest.id.as_str();
            let prefs = settings.get(id);
            if prefs.and_then(|p| p.get("enabled")) == Some(&Value::Bool(false)) {
                continue;
            }
            let mut aliases = aliases(id, prefs, &mut warnings);
            if d.scope > Scope::Global {
                if let Some(theirs) = users.get(&decl.name) {
                    warnings.push(format!(
                        "{}: the project's command {} (`{id}`) takes the name of your {theirs}; a project's command never replaces one of yours, so it is not loaded (yours answers). Rename it ([command] name in that file)",
                        d.location.join("extension.toml").display(),
                        decl.name
                    ));
                    continue;
                }
                aliases.retain(|a| !users.contains_key(a));
            }
            by_name.entry(decl.name.clone()).or_default().push(Entry {
                name: decl.name.clone(),
                aliases,
                description: d.manifest.description.clone().unwrap_or_default(),
                argument_hint: decl.argument_hint.clone(),
                turn_safe: decl.turn_safe,
                scope: d.scope,
                found: d.clone(),
            });
        }
        let mut entries = Vec::new();
        for (name, candidates) in by_name {
            // Highest scope first; a scope with two of the name is out.
            let mut scopes: Vec<Scope> = candidates.iter().map(|e| e.scope).collect();
            scopes.sort();
            scopes.dedup();
            for scope in scopes.into_iter().rev() {
                let here: Vec<&Entry> = candidates.iter().filter(|e| e.scope == scope).collect();
                if let [only] = here.as_slice() {
                    entries.push((*only).clone());
                    break;
                }
                warnings.push(format!(
                    "command {name} is declared by {} in the {scope} scope; a name may be declared once per scope, so none of them is loaded. Rename one ([command] name in its extension.toml) or disable one with \"commands\": {{\"<id>\": {{\"enabled\": false}}}}",
                    here.iter().map(|e| format!("`{}`", e.id())).collect::<Vec<_>>().join(" and ")
                ));
            }
        }
        (Catalogue { entries }, warnings)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn resolve(&self, typed: &str) -> Resolved<'_> {
        let hits: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| e.name.as_str() == typed || e.aliases.iter().any(|a| a.as_str() == typed))
            .collect();
        match hits.len() {
            0 => Resolved::Unknown {
                suggestions: self.close_to(typed),
            },
            1 => Resolved::One(hits[0]),
            _ => Resolved::Ambiguous(hits),
        }
    }

    /// Names that start with what was typed, then names a small edit away.
    fn close_to(&self, typed: &str) -> Vec<String> {
        let mut scored: Vec<(f64, String)> = self
            .entries
            .iter()
            .flat_map(|e| std::iter::once(&e.name).chain(e.aliases.iter()))
            .filter_map(|n| {
                let name = n.as_str();
                let score = if typed.len() > 1 && name.starts_with(typed) {
                    2.0
                } else {
                    strsim::jaro_winkler(typed, name)
                };
                (score >= 0.8).then(|| (score, name.to_string()))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, n)| n).take(3).collect()
    }
}

/// Every name and alias of the user's own (bundled and global) commands,
/// disabled ones included, with what it names ("bundled command /mode
/// (`mode`)").
fn users_names(
    found: &[Discovered],
    settings: &HashMap<String, Value>,
) -> BTreeMap<CommandName, String> {
    let mut names = BTreeMap::new();
    for d in found.iter().filter(|d| d.scope <= Scope::Global) {
        let (Kind::Command, Some(decl)) = (d.manifest.kind, &d.manifest.command) else {
            continue;
        };
        let id = d.manifest.id.as_str();
        let what = format!("{} command {} (`{id}`)", d.scope, decl.name);
        for alias in aliases(id, settings.get(id), &mut Vec::new()) {
            names.insert(alias, what.clone());
        }
        names.insert(decl.name.clone(), what);
    }
    names
}

fn aliases(id: &str, prefs: Option<&Value>, warnings: &mut Vec<String>) -> Vec<CommandName> {
    let Some(raw) = prefs.and_then(|p| p.get("alias")) else {
        return Vec::new();
    };
    let Some(list) = raw.as_array() else {
        warnings.push(format!(
            "settings.json: commands.{id}.alias: write a list of names, e.g. [\"m\"]; the aliases are ignored"
        ));
        return Vec::new();
    };
    list.iter()
        .filter_map(|v| {
            let parsed = v
                .as_str()
                .ok_or_else(|| format!("{v} is not a string"))
                .and_then(|s| CommandName::from_alias(s).map_err(|e| e.to_string()));
            match parsed {
                Ok(n) => Some(n),
                Err(e) => {
                    warnings.push(format!(
                        "settings.json: commands.{id}.alias: {e}; that alias is ignored"
                    ));
                    None
                }
            }
        })
        .collect()
}

/// The config an extension gets: `commands.<id>` without the kernel's keys.
pub fn extension_config(settings: Option<&Value>) -> Option<Value> {
    let mut v = settings?.clone();
    if let Value::Object(map) = &mut v {
        for k in KERNEL_KEYS {
            map.remove(k);
        }
        if map.is_empty() {
            return None;
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::HOST_CONTRACT;
    use crate::extensions::discovery::ComponentSource;
    use crate::manifest::parse_manifest;
    use serde_json::json;

    fn found(id: &str, name: &str, scope: Scope) -> Discovered {
        let text = format!(
            "id = \"{id}\"\nname = \"{id}\"\nversion = \"0.1.0\"\nkind = \"command\"\ncontract = \"^0.1\"\ndescription = \"does {id}\"\n\n[command]\nname = \"{name}\"\n"
        );
        let manifest = parse_manifest(
            &text,
            std::path::Path::new("extension.toml"),
            &HOST_CONTRACT,
        )
        .expect("test manifest parses");
        Discovered {
            scope,
            manifest,
            location: id.into(),
            component_path: "x.wasm".into(),
            source: ComponentSource::Embedded(&[]),
            expected_digest: None,
            overrides: None,
            lock: None,
            dev: false,
            session_pin: false,
        }
    }

    fn resolved_id(c: &Catalogue, typed: &str) -> Option<String> {
        match c.resolve(typed) {
            Resolved::One(e) => Some(e.id().to_string()),
            _ => None,
        }
    }

    #[test]
    fn a_global_command_shadows_a_bundled_one_and_a_project_one_never_does() {
        let all = [
            found("help", "/help", Scope::Bundled),
            found("my-help", "/help", Scope::Global),
            found("team-help", "/help", Scope::Project),
            found("team-mode", "/md", Scope::Project),
            found("team-own", "/own", Scope::Project),
        ];
        let settings: HashMap<String, Value> = [
            ("help".to_string(), json!({"alias": ["/md"]})),
            ("team-own".to_string(), json!({"alias": ["/help", "/o"]})),
        ]
        .into_iter()
        .collect();
        let (c, warnings) = Catalogue::build(&all, &settings);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("team-help") && warnings[0].contains("global command /help"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("team-mode") && warnings[1].contains("bundled command /help"),
            "{warnings:?}"
        );
        assert_eq!(resolved_id(&c, "/help").as_deref(), Some("my-help"));
        assert_eq!(resolved_id(&c, "/own").as_deref(), Some("team-own"));
        assert_eq!(resolved_id(&c, "/o").as_deref(), Some("team-own"));
        assert!(matches!(c.resolve("/md"), Resolved::Unknown { .. }));
        let (c, _) = Catalogue::build(&all[..2], &HashMap::new());
        assert_eq!(resolved_id(&c, "/help").as_deref(), Some("my-help"));
    }

    #[test]
    fn a_name_twice_in_one_scope_loads_neither_and_names_both() {
        let all = [
            found("help", "/help", Scope::Bundled),
            found("a", "/x", Scope::Global),
            found("b", "/x", Scope::Global),
        ];
        let (c, warnings) = Catalogue::build(&all, &HashMap::new());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`a` and `b`") && warnings[0].contains("/x"));
        assert!(matches!(c.resolve("/x"), Resolved::Unknown { .. }));
    }

    #[test]
    fn settings_disable_alias_and_collide() {
        let all = [
            found("model", "/model", Scope::Bundled),
            found("mode", "/mode", Scope::Bundled),
            found("cost", "/cost", Scope::Bundled),
        ];
        let settings: HashMap<String, Value> = [
            (
                "model".to_string(),
                json!({"alias": ["m", "/mm", "bad name"]}),
            ),
            ("mode".to_string(), json!({"alias": ["m"]})),
            ("cost".to_string(), json!({"enabled": false, "x": 1})),
        ]
        .into_iter()
        .collect();
        let (c, warnings) = Catalogue::build(&all, &settings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("commands.model.alias"));
        assert_eq!(resolved_id(&c, "/mm").as_deref(), Some("model"));
        assert!(matches!(c.resolve("/m"), Resolved::Ambiguous(v) if v.len() == 2));
        assert!(matches!(c.resolve("/cost"), Resolved::Unknown { .. }));
        assert_eq!(
            extension_config(settings.get("cost")),
            Some(json!({"x": 1})),
            "the kernel's keys are not the extension's config"
        );
        assert_eq!(extension_config(settings.get("model")), None);
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let all = [
            found("help", "/help", Scope::Bundled),
            found("health", "/health", Scope::Bundled),
            found("model", "/model", Scope::Bundled),
        ];
        let (c, _) = Catalogue::build(&all, &HashMap::new());
        let Resolved::Unknown { suggestions } = c.resolve("/hlep") else {
            panic!("resolved")
        };
        assert_eq!(suggestions.first().map(String::as_str), Some("/help"));
        let Resolved::Unknown { suggestions } = c.resolve("/he") else {
            panic!("resolved")
        };
        assert!(
            suggestions.contains(&"/health".to_string())
                && suggestions.contains(&"/help".to_string())
        );
        let Resolved::Unknown { suggestions } = c.resolve("/zzzzzz") else {
            panic!("resolved")
        };
        assert!(suggestions.is_empty());
    }
}
