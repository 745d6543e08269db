//! Each extension's config, read only from the settings section of its
//! own kind (`providers.<id>` for a provider, `commands.<id>` for a
//! command, ...). The sections used to be merged by id, so a value filed
//! under another kind's section (`commands.anthropic.baseUrl` from a
//! project, where `commands.*` needs no review) reached the provider
//! without the review its own section has.

use std::collections::HashMap;

use serde_json::Value;

use crate::manifest::Kind;

/// The settings section of each kind.
pub const SECTIONS: [(Kind, &str); 9] = [
    (Kind::Provider, "providers"),
    (Kind::Tool, "tools"),
    (Kind::Hook, "hooks"),
    (Kind::Ui, "ui"),
    (Kind::Logger, "loggers"),
    (Kind::ContextProvider, "contextProviders"),
    (Kind::Command, "commands"),
    (Kind::SessionStore, "sessionStores"),
    (Kind::StateMachine, "stateMachines"),
];

/// The settings section that holds config for extensions of `kind`.
pub fn section(kind: Kind) -> &'static str {
    SECTIONS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or("", |(_, s)| s)
}

/// Config by (kind, id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtensionConfigs(HashMap<(Kind, String), Value>);

impl ExtensionConfigs {
    pub fn get(&self, kind: Kind, id: &str) -> Option<&Value> {
        self.0.get(&(kind, id.to_string()))
    }

    pub fn insert(&mut self, kind: Kind, id: &str, value: Value) {
        self.0.insert((kind, id.to_string()), value);
    }

    /// The entry of `kind`/`id`, made an empty object first if missing.
    pub fn entry(&mut self, kind: Kind, id: &str) -> &mut Value {
        self.0
            .entry((kind, id.to_string()))
            .or_insert_with(|| Value::Object(Default::default()))
    }

    /// One warning per entry filed under a section other than its
    /// extension's: `found` lists every extension there is, as (kind, id).
    pub fn misfiled<'a>(
        &self,
        found: impl Iterator<Item = (Kind, &'a str)> + Clone,
    ) -> Vec<String> {
        let mut out: Vec<String> = self
            .0
            .keys()
            .filter(|(kind, id)| !found.clone().any(|(k, i)| k == *kind && i == id))
            .filter_map(|(kind, id)| {
                let (real, _) = found.clone().find(|(_, i)| i == id)?;
                Some(format!(
                    "settings.json: {}.{id} is ignored: `{id}` is a {real} extension, so its settings go under {}.{id}",
                    section(*kind),
                    section(real)
                ))
            })
            .collect();
        out.sort();
        out
    }
}

impl FromIterator<((Kind, String), Value)> for ExtensionConfigs {
    fn from_iter<I: IntoIterator<Item = ((Kind, String), Value)>>(iter: I) -> Self {
        ExtensionConfigs(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_reaches_only_the_extension_of_its_sections_kind() {
        let mut c = ExtensionConfigs::default();
        c.insert(
            Kind::Command,
            "anthropic",
            json!({"baseUrl": "https://evil"}),
        );
        c.insert(Kind::Provider, "scripted", json!({"model": "m"}));
        assert!(c.get(Kind::Provider, "anthropic").is_none());
        assert_eq!(
            c.get(Kind::Provider, "scripted"),
            Some(&json!({"model": "m"}))
        );
        let found = [(Kind::Provider, "anthropic"), (Kind::Provider, "scripted")];
        let warnings = c.misfiled(found.iter().copied());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("commands.anthropic is ignored")
                && warnings[0].contains("providers.anthropic"),
            "{warnings:?}"
        );
    }
}
