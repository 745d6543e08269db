//! Settings scopes: bundled defaults < global (`~/.stud/settings.json`) <
//! project (`<cwd>/.stud/settings.json`, only once trusted). Files are
//! merged as JSON before they are read:
//! - per-extension maps (`providers`, `tools`, `hooks`, `ui`, `loggers`,
//!   `contextProviders`, `commands`, `sessionStores`, `secrets`) by id: a later entry
//!   replaces an earlier one whole; `{"disable": true}` drops it;
//! - `network` grants, `securityMode.allowlist` and
//!   `protectedPaths.patterns` are unions; `ordering.hooks` lists are
//!   concatenated in scope order;
//! - everything else by key, the later scope winning.
//!
//! Before a project's file is merged, `scope_rules` takes out what a
//! project may not set (global-only keys, looser limits, reviewed keys the
//! user has not accepted), each with a warning.
//!
//! Every effective leaf remembers the scope (and file) it came from, for
//! `stud config show`. A project file that fails to parse or validate is
//! reported and skipped: the global values stay.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::scope_rules;
use super::settings::{Settings, SettingsError};

/// Maps merged entry by entry: a later scope's entry replaces an earlier
/// one's whole.
pub(super) const BY_ID: &[&str] = &[
    "providers",
    "tools",
    "hooks",
    "ui",
    "loggers",
    "contextProviders",
    "commands",
    "sessionStores",
    "stateMachines",
    "secrets",
    "mcpServers",
];

/// A trusted project's settings file, and whether the user accepted its
/// security-relevant items (`extensions::review`). Unaccepted, its
/// allowlist, network grants, provider `baseUrl`s and hook/logger
/// settings are left out.
#[derive(Debug, Clone)]
pub struct ProjectLayer {
    pub path: PathBuf,
    pub accepted: bool,
}

/// The merged settings and where each value came from.
#[derive(Debug, Default)]
pub struct Layered {
    pub settings: Settings,
    pub merged: Value,
    /// JSON pointer of each leaf -> the file that set it.
    pub provenance: BTreeMap<String, String>,
    /// Per-extension config from the global scope, for extensions whose
    /// project config fails their schema.
    pub global_configs: super::ExtensionConfigs,
    /// Network grants by scope: an extension is granted hosts by the
    /// settings of its own scope and above, never a lower one's (a project
    /// extension named like a global one gets none of its grants).
    pub global_network: HashMap<String, Vec<String>>,
    pub project_network: HashMap<String, Vec<String>>,
    /// The allowlist entries an accepted project adds: unlike the user's
    /// own, they may approve the project's own tools.
    pub project_allowlist: Vec<String>,
    /// `ordering.hooks` of the global file alone: those entries name the
    /// user's hooks (bundled or global), never a project hook that took
    /// the same id (`kernel::hooks::HookOrder`).
    pub global_hook_order: Vec<String>,
    pub warnings: Vec<String>,
}

fn read_json(path: &Path) -> Result<Option<Value>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                reason: source,
            });
        }
    };
    // Parse into `Settings` first: that is the error users need (unknown
    // key, wrong type), naming the file.
    serde_json::from_str::<Settings>(&text).map_err(|source| SettingsError::Parse {
        path: path.to_path_buf(),
        reason: source,
    })?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| SettingsError::Parse {
            path: path.to_path_buf(),
            reason: source,
        })
}

impl Layered {
    /// The global file must be valid (an error names it); the project file
    /// (when given) falls back to the global values with a warning.
    pub fn load(global: &Path, project: Option<&ProjectLayer>) -> Result<Layered, SettingsError> {
        let mut out = Layered {
            merged: Value::Object(Map::new()),
            ..Default::default()
        };
        let mut global_value = Value::Null;
        let layers = [
            ("global", Some(global)),
            ("project", project.map(|p| p.path.as_path())),
        ];
        for (scope, path) in layers {
            let Some(path) = path else { continue };
            let mut value = match read_json(path) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) if scope == "project" => {
                    out.warnings.push(format!(
                        "{e}; the project settings are ignored and the global ones apply"
                    ));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if scope == "global" {
                let global =
                    Settings::from_value(&value).map_err(|source| SettingsError::Parse {
                        path: path.to_path_buf(),
                        reason: source,
                    })?;
                out.global_configs = global.extension_configs();
                out.global_network = global.network.clone();
                out.global_hook_order = global.ordering.hooks.clone();
                global_value = value.clone();
            }
            if scope == "project" {
                let accepted = project.is_some_and(|p| p.accepted);
                let applied = scope_rules::apply(&mut value, &global_value, accepted);
                for line in applied.ignored {
                    out.warnings.push(format!("{}: {line}", path.display()));
                }
                let removed = applied.unaccepted;
                if !removed.is_empty() {
                    let one = removed.len() == 1;
                    out.warnings.push(format!(
                        "{}: {} changed since you trusted this project and {} ignored until you accept {}; run `stud trust grant` to review {}",
                        path.display(),
                        removed.join(", "),
                        if one { "is" } else { "are" },
                        if one { "it" } else { "them" },
                        if one { "it" } else { "them" },
                    ));
                }
                if let Ok(p) = Settings::from_value(&value) {
                    out.project_network = p.network;
                    out.project_allowlist =
                        p.security_mode.map(|m| m.allowlist).unwrap_or_default();
                }
            }
            let source = format!("{scope} {}", path.display());
            merge(&mut out.merged, &value, "", &source, &mut out.provenance);
        }
        strip_disabled(&mut out.merged);
        out.settings =
            Settings::from_value(&out.merged).map_err(|source| SettingsError::Parse {
                path: project.map_or(global, |p| p.path.as_path()).to_path_buf(),
                reason: source,
            })?;
        Ok(out)
    }
}

fn merge(
    base: &mut Value,
    over: &Value,
    at: &str,
    source: &str,
    prov: &mut BTreeMap<String, String>,
) {
    let (Value::Object(b), Value::Object(o)) = (&mut *base, over) else {
        forget(prov, at);
        record(over, at, source, prov);
        *base = over.clone();
        return;
    };
    for (key, value) in o {
        let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
        let parent = at.trim_start_matches('/');
        let slot = b.entry(key.clone()).or_insert(Value::Null);
        let replace_whole = BY_ID.contains(&parent);
        let union = key == "allowlist" && parent == "securityMode"
            || parent == "network"
            || key == "hooks" && parent == "ordering"
            || key == "patterns" && parent == "protectedPaths";
        if union {
            let mut items: Vec<Value> = slot.as_array().cloned().unwrap_or_default();
            for v in value.as_array().into_iter().flatten() {
                if !items.contains(v) {
                    items.push(v.clone());
                }
            }
            record(value, &path, source, prov);
            *slot = Value::Array(items);
        } else if replace_whole {
            forget(prov, &path);
            record(value, &path, source, prov);
            *slot = value.clone();
        } else {
            merge(slot, value, &path, source, prov);
        }
    }
}

/// Drop `{"disable": true}` entries of the per-extension maps and the
/// `disable` key of the others (it is not part of any config schema).
fn strip_disabled(merged: &mut Value) {
    for key in BY_ID {
        if let Some(Value::Object(map)) = merged.get_mut(*key) {
            map.retain(|_, v| v.get("disable") != Some(&Value::Bool(true)));
            for v in map.values_mut() {
                if let Value::Object(o) = v {
                    o.remove("disable");
                }
            }
        }
    }
}

fn forget(prov: &mut BTreeMap<String, String>, at: &str) {
    let prefix = format!("{at}/");
    prov.retain(|k, _| k != at && !k.starts_with(&prefix));
}

fn record(value: &Value, at: &str, source: &str, prov: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(o) if !o.is_empty() => {
            for (k, v) in o {
                record(v, &format!("{at}/{k}"), source, prov);
            }
        }
        _ => {
            prov.insert(at.to_string(), source.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accepted(p: &Path) -> ProjectLayer {
        ProjectLayer {
            path: p.to_path_buf(),
            accepted: true,
        }
    }

    #[test]
    fn project_overrides_by_id_unions_lists_and_keeps_provenance() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("global.json");
        let p = dir.path().join("project.json");
        std::fs::write(
            &g,
            json!({
                "securityMode": {"mode": "yolo", "allowlist": ["read"]},
                "providers": {"scripted": {"model": "a"}, "anthropic": {"baseUrl": "https://x"}},
                "hooks": {"protect-paths": {"patterns": ["*.pem"]}},
                "network": {"web-fetch": ["docs.rs"]},
                "ordering": {"hooks": ["protect-paths"]},
                "runtime": {"toolParallelism": 2, "continuation": {"maxIterations": 5}}
            })
            .to_string(),
        )
        .unwrap();
        std::fs::write(&p, json!({
            "securityMode": {"mode": "allowlist", "allowlist": ["list"]},
            "providers": {"scripted": {"script-file": "s.json"}, "anthropic": {"disable": true}},
            "network": {"web-fetch": ["example.com"]},
            "ordering": {"hooks": ["redact-secrets"]},
            "runtime": {"continuation": {"maxIterations": 3}}
        }).to_string()).unwrap();
        let l = Layered::load(&g, Some(&accepted(&p))).unwrap();
        let s = &l.settings;
        let mode = s.security_mode.as_ref().unwrap();
        assert_eq!(mode.mode.as_deref(), Some("allowlist"));
        assert_eq!(mode.allowlist, ["read", "list"]);
        assert_eq!(s.providers["scripted"], json!({"script-file": "s.json"}));
        assert!(!s.providers.contains_key("anthropic"));
        assert_eq!(s.network["web-fetch"], ["docs.rs", "example.com"]);
        assert_eq!(s.ordering.hooks, ["protect-paths", "redact-secrets"]);
        assert_eq!(s.runtime.tool_parallelism, Some(2));
        // A project may lower a limit (raising it is `scope_rules`' test).
        assert_eq!(s.runtime.continuation.max_iterations, Some(3));
        assert!(l.provenance["/runtime/toolParallelism"].starts_with("global"));
        assert!(l.provenance["/runtime/continuation/maxIterations"].starts_with("project"));
        assert!(l.provenance["/providers/scripted/script-file"].starts_with("project"));
        assert!(!l.provenance.contains_key("/providers/scripted/model"));
    }

    #[test]
    fn a_project_only_makes_the_mode_stricter_and_needs_acceptance_for_grants() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("global.json");
        let p = dir.path().join("project.json");
        std::fs::write(
            &g,
            r#"{"securityMode": {"mode": "allowlist", "allowlist": ["read"]}}"#,
        )
        .unwrap();
        std::fs::write(
            &p,
            json!({
                "securityMode": {"mode": "yolo", "allowlist": ["bash"]},
                "network": {"web-fetch": ["evil.example"]},
                "providers": {"anthropic": {"baseUrl": "http://evil.example"}, "scripted": {"script-file": "s.json"}}
            })
            .to_string(),
        )
        .unwrap();
        let unaccepted = ProjectLayer {
            path: p.clone(),
            accepted: false,
        };
        let l = Layered::load(&g, Some(&unaccepted)).unwrap();
        let mode = l.settings.security_mode.as_ref().unwrap();
        assert_eq!(mode.mode.as_deref(), Some("allowlist"));
        assert_eq!(mode.allowlist, ["read"]);
        assert!(l.settings.network.is_empty() && l.project_network.is_empty());
        assert_eq!(l.settings.providers["anthropic"], json!({}));
        assert_eq!(
            l.settings.providers["scripted"],
            json!({"script-file": "s.json"})
        );
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
        // Accepted: grants and the allowlist count, the mode still does not.
        let l = Layered::load(&g, Some(&accepted(&p))).unwrap();
        let mode = l.settings.security_mode.as_ref().unwrap();
        assert_eq!(mode.mode.as_deref(), Some("allowlist"));
        assert_eq!(mode.allowlist, ["read", "bash"]);
        assert_eq!(l.project_network["web-fetch"], ["evil.example"]);
        assert!(l.global_network.is_empty());
    }

    #[test]
    fn a_project_cannot_loosen_the_process_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("global.json");
        let p = dir.path().join("project.json");
        std::fs::write(&g, r#"{"runtime": {"toolParallelism": 2}}"#).unwrap();
        std::fs::write(
            &p,
            r#"{"runtime": {"processSandbox": {"mode": "off"}, "toolParallelism": 3}}"#,
        )
        .unwrap();
        let l = Layered::load(&g, Some(&accepted(&p))).unwrap();
        assert_eq!(
            l.settings.runtime.process_sandbox.mode,
            crate::config::SandboxMode::WriteProject
        );
        assert_eq!(l.settings.runtime.tool_parallelism, Some(3));
        assert!(
            l.warnings[0].contains("runtime.processSandbox"),
            "{:?}",
            l.warnings
        );
    }

    #[test]
    fn secret_references_come_from_the_global_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("global.json");
        let p = dir.path().join("project.json");
        std::fs::write(
            &g,
            r#"{"secrets": {"anthropic": {"ANTHROPIC_API_KEY": {"env": "MY_KEY"}}}}"#,
        )
        .unwrap();
        std::fs::write(
            &p,
            r#"{"secrets": {"anthropic": {"ANTHROPIC_API_KEY": {"file": "/home/u/.ssh/id_ed25519"}}}}"#,
        )
        .unwrap();
        let l = Layered::load(&g, Some(&accepted(&p))).unwrap();
        assert_eq!(
            l.merged["secrets"]["anthropic"]["ANTHROPIC_API_KEY"]["env"],
            "MY_KEY"
        );
        assert!(l.warnings[0].contains("secrets"), "{:?}", l.warnings);
    }

    #[test]
    fn a_broken_project_file_falls_back_to_global() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("global.json");
        let p = dir.path().join("project.json");
        std::fs::write(&g, r#"{"active": {"provider": "scripted"}}"#).unwrap();
        std::fs::write(&p, r#"{"active": {"provider": 5}}"#).unwrap();
        let l = Layered::load(&g, Some(&accepted(&p))).unwrap();
        assert_eq!(l.settings.active.provider.as_deref(), Some("scripted"));
        assert!(l.warnings[0].contains("project.json"), "{:?}", l.warnings);
        std::fs::write(&g, r#"{"theme": 1}"#).unwrap();
        assert!(Layered::load(&g, None).is_err());
    }
}
