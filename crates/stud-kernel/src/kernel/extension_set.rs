//! Which extensions one session uses: a named profile from the global
//! settings (`profiles.<name>`, `--profile`), narrowed or widened for one
//! run by `--tools a,b` and `--disable ID`. The set is recorded in the
//! session's manifest, and `--resume` / `-c` use the recorded set unless
//! the command line chooses another.

use std::collections::BTreeSet;

use super::agent_catalog::TASK_TOOL;

use serde::{Deserialize, Serialize};

use crate::config::{Profile, Settings};
use crate::extensions::{Discovered, Scope};
use crate::manifest::{Kind, Manifest};

/// What the command line asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetChoice {
    pub profile: Option<String>,
    pub tools: Option<Vec<String>>,
    pub disable: Vec<String>,
}

impl SetChoice {
    pub fn is_empty(&self) -> bool {
        self.profile.is_none() && self.tools.is_none() && self.disable.is_empty()
    }
}

/// The resolved set: the profile's fields with the run's flags applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExtensionSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(flatten)]
    pub choice: Profile,
    /// What the command line said, for error messages.
    #[serde(skip)]
    flags: SetChoice,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SetError {
    #[error(
        "--profile {name}: no profile of that name in the global settings (profiles.{name}); defined: {defined}"
    )]
    UnknownProfile { name: String, defined: String },
    #[error("{origin}: no {what}extension `{id}` is installed; installed: {installed}")]
    UnknownId {
        origin: String,
        what: &'static str,
        id: String,
        installed: String,
    },
    #[error(
        "{origin}: `{id}` names one of your own {what}extensions, but the `{id}` here is the project's ({location}), which a profile never means; rename one of the two"
    )]
    ProjectsOwn {
        origin: String,
        what: &'static str,
        id: String,
        location: String,
    },
}

impl ExtensionSet {
    /// Resolve the flags against the settings. `None` when nothing narrows
    /// the set (every discovered extension is used).
    pub fn resolve(choice: &SetChoice, settings: &Settings) -> Result<Option<Self>, SetError> {
        if choice.is_empty() {
            return Ok(None);
        }
        let mut profile = match &choice.profile {
            Some(name) => settings.profiles.get(name).cloned().ok_or_else(|| {
                let mut names: Vec<&str> = settings.profiles.keys().map(String::as_str).collect();
                names.sort();
                SetError::UnknownProfile {
                    name: name.clone(),
                    defined: if names.is_empty() {
                        "(none)".into()
                    } else {
                        names.join(", ")
                    },
                }
            })?,
            None => Profile::default(),
        };
        if let Some(tools) = &choice.tools {
            profile.tools = Some(tools.clone());
        }
        profile.disable.extend(choice.disable.iter().cloned());
        Ok(Some(ExtensionSet {
            profile: choice.profile.clone(),
            choice: profile,
            flags: choice.clone(),
        }))
    }

    /// Every id the set names must be installed (a typo must not silently
    /// leave a guard or a tool out).
    pub fn check(&self, found: &[Discovered]) -> Result<(), SetError> {
        let profile = match &self.profile {
            Some(p) => format!("profiles.{p}"),
            None => "the command line".to_string(),
        };
        let origin = |what: &str, id: &str| match what {
            "tool " if self.flags.tools.is_some() => "--tools".to_string(),
            "" if self.flags.disable.iter().any(|d| d == id) => "--disable".to_string(),
            _ => profile.clone(),
        };
        let lists: [(&'static str, Option<Kind>, Vec<&String>); 6] = [
            (
                "tool ",
                Some(Kind::Tool),
                self.choice.tools.iter().flatten().collect(),
            ),
            (
                "hook ",
                Some(Kind::Hook),
                self.choice.hooks.iter().flatten().collect(),
            ),
            (
                "context-provider ",
                Some(Kind::ContextProvider),
                self.choice.context_providers.iter().flatten().collect(),
            ),
            ("ui ", Some(Kind::Ui), self.choice.ui.iter().collect()),
            (
                "session store ",
                Some(Kind::SessionStore),
                self.choice.session_store.iter().collect(),
            ),
            ("", None, self.choice.disable.iter().collect()),
        ];
        for (what, kind, ids) in lists {
            // MCP tools are named, not installed: checked when servers
            // start; `task` is the kernel's.
            for id in ids.into_iter().filter(|id| {
                !((what == "tool " && id.starts_with("mcp__"))
                    || (what != "hook " && what != "ui " && id.as_str() == TASK_TOOL))
            }) {
                let named = |d: &&Discovered| {
                    d.manifest.id.as_str() == id && kind.is_none_or(|k| d.manifest.kind == k)
                };
                let from_flag = what.is_empty() || (what == "tool " && self.flags.tools.is_some());
                let present = found
                    .iter()
                    .filter(named)
                    .any(|d| self.admits(from_flag, d.scope));
                if let Some(theirs) = found.iter().find(named).filter(|_| !present) {
                    return Err(SetError::ProjectsOwn {
                        origin: origin(what, id),
                        what,
                        id: id.clone(),
                        location: theirs.location.display().to_string(),
                    });
                }
                if !present {
                    let installed: BTreeSet<&str> = found
                        .iter()
                        .filter(|d| kind.is_none_or(|k| d.manifest.kind == k))
                        .map(|d| d.manifest.id.as_str())
                        .collect();
                    return Err(SetError::UnknownId {
                        origin: origin(what, id),
                        what,
                        id: id.clone(),
                        installed: installed.into_iter().collect::<Vec<_>>().join(", "),
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether a name of the set may mean an extension found in `scope`:
    /// a profile is the user's own (global settings), so its names mean
    /// bundled or global extensions, never a project's under the same id;
    /// what was typed for this run (`--tools`, `--disable`) means what is
    /// loaded.
    fn admits(&self, from_flag: bool, scope: Scope) -> bool {
        from_flag || self.profile.is_none() || scope <= Scope::Global
    }

    /// Whether the session uses this extension (found in `scope`).
    pub fn keeps(&self, m: &Manifest, scope: Scope) -> bool {
        let id = m.id.as_str();
        if self.choice.disable.iter().any(|d| d == id) {
            return false;
        }
        let listed = |list: &Option<Vec<String>>, from_flag: bool| {
            list.as_ref()
                .is_none_or(|l| l.iter().any(|x| x == id) && self.admits(from_flag, scope))
        };
        match m.kind {
            Kind::Tool => listed(&self.choice.tools, self.flags.tools.is_some()),
            Kind::Hook => listed(&self.choice.hooks, false),
            Kind::ContextProvider => listed(&self.choice.context_providers, false),
            Kind::Ui => self
                .choice
                .ui
                .as_ref()
                .is_none_or(|u| u == id && self.admits(false, scope)),
            _ => true,
        }
    }

    /// Whether the session offers the kernel's `task` tool: unless a
    /// `tools` list leaves it out or it is disabled.
    pub fn keeps_task(&self) -> bool {
        self.keeps_kernel_tool(TASK_TOOL)
    }

    /// Whether the session offers the kernel's tool `name` (`task`,
    /// `skill`): unless a `tools` list leaves it out or it is disabled.
    pub fn keeps_kernel_tool(&self, name: &str) -> bool {
        !self.choice.disable.iter().any(|d| d == name)
            && self
                .choice
                .tools
                .as_ref()
                .is_none_or(|l| l.iter().any(|t| t == name))
    }

    /// Whether the session offers MCP tool `name`: with a `tools` list,
    /// only those it names (`mcp__github__create_issue`) or matches by a
    /// trailing `*` (`mcp__github__*`).
    pub fn keeps_mcp_tool(&self, name: &str) -> bool {
        self.choice.tools.as_ref().is_none_or(|list| {
            list.iter()
                .filter(|e| e.starts_with("mcp__"))
                .any(|e| match e.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => e == name,
                })
        })
    }

    /// One line for the session start.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.profile {
            parts.push(format!("profile {p}"));
        }
        let list = |name: &str, l: &Option<Vec<String>>, parts: &mut Vec<String>| {
            if let Some(l) = l {
                let shown = if l.is_empty() {
                    "none".to_string()
                } else {
                    l.join(",")
                };
                parts.push(format!("{name} {shown}"));
            }
        };
        list("tools", &self.choice.tools, &mut parts);
        list("hooks", &self.choice.hooks, &mut parts);
        list("context", &self.choice.context_providers, &mut parts);
        if let Some(ui) = &self.choice.ui {
            parts.push(format!("ui {ui}"));
        }
        if !self.choice.disable.is_empty() {
            parts.push(format!("without {}", self.choice.disable.join(",")));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: serde_json::Value) -> Settings {
        Settings::from_value(&v).expect("test settings")
    }

    #[test]
    fn flags_narrow_the_profile() {
        let s = settings(
            json!({"profiles": {"review": {"tools": ["read", "grep"], "hooks": [], "mode": "ask"}}}),
        );
        let set = ExtensionSet::resolve(
            &SetChoice {
                profile: Some("review".into()),
                tools: Some(vec!["read".into()]),
                disable: vec!["jsonl".into()],
            },
            &s,
        )
        .ok()
        .flatten()
        .expect("a set");
        assert_eq!(set.choice.tools, Some(vec!["read".to_string()]));
        assert_eq!(set.choice.hooks, Some(vec![]));
        assert_eq!(set.choice.disable, vec!["jsonl".to_string()]);
        assert_eq!(
            set.describe(),
            "profile review; tools read; hooks none; without jsonl"
        );
        assert!(matches!(
            ExtensionSet::resolve(&SetChoice::default(), &s),
            Ok(None)
        ));
        let err = ExtensionSet::resolve(
            &SetChoice {
                profile: Some("nope".into()),
                ..SetChoice::default()
            },
            &s,
        );
        assert!(
            matches!(err, Err(SetError::UnknownProfile { defined, .. }) if defined == "review")
        );
    }
}
