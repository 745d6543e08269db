//! What a project's `.stud/` changes that bears on security, in plain
//! words: the trust prompt shows it, and the user's acceptance is recorded
//! as a digest of it. A trusted project whose review no longer matches the
//! accepted digest (a `git pull` added a network grant, say) runs without
//! those items until the user looks at them again.
//!
//! Some things a project may never do, accepted or not: loosen the
//! security mode (ask > allowlist > yolo) or a limit, or set keys that are
//! the user's own. `config::scope_rules` has the rule of every key; the
//! keys it marks `Reviewed` are the ones this review lists.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::consent;
use super::discovery::{Discovered, project_extensions};
use super::scope::Scope;
use crate::digest::Sha256Digest;
use crate::manifest::Kind;
use crate::mode::Mode;

/// One security-relevant thing the project changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "item", rename_all = "kebab-case")]
pub enum ReviewItem {
    /// The project asks for a looser mode than the user's: never honoured.
    ModeLoosened { asked: String, kept: String },
    /// The project makes approvals stricter: always honoured.
    ModeStricter { mode: String },
    /// An allowlist entry the project adds.
    Allowlist { entry: String },
    /// A host the project grants an extension.
    NetworkGrant { extension: String, host: String },
    /// A provider's `baseUrl` pointing somewhere the user's settings and
    /// its manifest do not: its keys go there.
    KeyRedirect {
        provider: String,
        host: String,
        secrets: Vec<String>,
        plain_http: bool,
    },
    /// The project turns off a hook or logger extension.
    Disables { extension: String, kind: String },
    /// The project changes a hook's settings (a guard's patterns, say).
    HookConfig { extension: String },
    /// A command `command-hooks` would run (from the project's
    /// `.stud/settings.json`, or its Claude Code `.claude/settings.json`
    /// when the user's settings read those): shown line by line.
    HookCommand {
        event: String,
        command: String,
        file: String,
    },
    /// The project configures a context provider: what it puts into every
    /// prompt (a file named in its config, say).
    ContextConfig { extension: String, config: String },
    /// An extension the project brings, with what it may do.
    Extension {
        id: String,
        kind: String,
        version: String,
        /// Pinned in the project's `extensions.lock` (installed with
        /// `stud ext install --scope project`), or a hand-placed folder.
        pinned: bool,
        component: String,
        capabilities: Vec<String>,
        /// The kind of the user's global extension of the same id, which
        /// this one replaces while the project is trusted (it gets none of
        /// that one's grants, and settings that name it keep meaning the
        /// user's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<String>,
    },
    /// A folder that takes a bundled extension's id: never loaded
    /// (`discovery::not_reserved`).
    ReservedId { id: String, manifest: String },
}

impl ReviewItem {
    /// Whether honouring it needs the user's acceptance (the others are
    /// either always applied or never).
    fn needs_acceptance(&self) -> bool {
        !matches!(
            self,
            ReviewItem::ModeLoosened { .. }
                | ReviewItem::ModeStricter { .. }
                | ReviewItem::ReservedId { .. }
        )
    }

    /// The item in plain words, one line (more for an extension).
    pub fn describe(&self) -> Vec<String> {
        match self {
            ReviewItem::ModeLoosened { asked, kept } => vec![format!(
                "asks for security mode `{asked}`: ignored, a project can only make approvals stricter (`{kept}` stays)"
            )],
            ReviewItem::ModeStricter { mode } => {
                vec![format!("makes approvals stricter: security mode `{mode}`")]
            }
            ReviewItem::Allowlist { entry } => {
                vec![format!(
                    "runs calls matching `{entry}` without asking (allowlist)"
                )]
            }
            ReviewItem::NetworkGrant { extension, host } => {
                vec![format!("lets extension `{extension}` connect to {host}")]
            }
            ReviewItem::KeyRedirect {
                provider,
                host,
                secrets,
                plain_http,
            } => {
                let what = if secrets.is_empty() {
                    format!("points provider `{provider}` at {host}")
                } else {
                    format!(
                        "sends your {} key to {host} (provider `{provider}`)",
                        secrets.join(" / ")
                    )
                };
                let mut lines = vec![what];
                if *plain_http {
                    lines.push(
                        "    over plain http: keys are never sent that way except to this machine"
                            .into(),
                    );
                }
                lines
            }
            ReviewItem::Disables { extension, kind } => {
                vec![format!("turns off the {kind} extension `{extension}`")]
            }
            ReviewItem::HookConfig { extension } => {
                vec![format!("changes the settings of hook `{extension}`")]
            }
            ReviewItem::HookCommand {
                event,
                command,
                file,
            } => vec![format!(
                "runs the command `{command}` at {event} (command-hooks, from {file})"
            )],
            ReviewItem::ContextConfig { extension, config } => vec![format!(
                "changes what context provider `{extension}` puts into every prompt: {config}"
            )],
            ReviewItem::Extension {
                id,
                kind,
                version,
                pinned,
                capabilities,
                replaces,
                ..
            } => {
                let how = if *pinned {
                    "pinned in its extensions.lock"
                } else {
                    "an unpinned folder in .stud/extensions/"
                };
                let mut lines = vec![format!(
                    "brings the {kind} extension `{id}` {version} ({how}); it may:"
                )];
                lines.extend(capabilities.iter().map(|c| format!("    - {c}")));
                if let Some(theirs) = replaces {
                    lines.push(format!(
                        "    and it replaces your global {theirs} extension `{id}` in this project (your settings that name `{id}` keep meaning yours: it is not the interactor, nor a hook or profile entry they name)"
                    ));
                }
                lines
            }
            ReviewItem::ReservedId { id, manifest } => vec![format!(
                "ships {manifest}, which takes the id `{id}` reserved for the bundled extension: refused, never loaded (the bundled `{id}` stays)"
            )],
        }
    }
}

/// Everything security-relevant a project changes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProjectReview {
    pub items: Vec<ReviewItem>,
}

impl ProjectReview {
    /// Review `stud_dir` (a project's `.stud` folder) against the global
    /// settings file and the bundled and global extensions.
    pub fn of(stud_dir: &Path, global_settings: &Path, lower: &[Discovered]) -> Self {
        let project = read_json(&stud_dir.join("settings.json"));
        let global = read_json(global_settings);
        let mut items = Vec::new();
        mode_items(&project, &global, &mut items);
        if let Some(list) = project
            .pointer("/securityMode/allowlist")
            .and_then(Value::as_array)
        {
            items.extend(
                list.iter()
                    .filter_map(Value::as_str)
                    .map(|e| ReviewItem::Allowlist {
                        entry: e.to_string(),
                    }),
            );
        }
        if let Some(map) = project.get("network").and_then(Value::as_object) {
            for (id, hosts) in map {
                for host in hosts
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    items.push(ReviewItem::NetworkGrant {
                        extension: id.clone(),
                        host: host.to_string(),
                    });
                }
            }
        }
        redirect_items(&project, &global, lower, &mut items);
        hook_items(&project, lower, &mut items);
        let claude = stud_dir
            .parent()
            .map(|p| read_json(&p.join(".claude").join("settings.json")))
            .unwrap_or(Value::Null);
        hook_commands(
            project.pointer("/hooks/command-hooks"),
            ".stud/settings.json",
            &mut items,
        );
        hook_commands(claude.get("hooks"), ".claude/settings.json", &mut items);
        let (found, problems) = project_extensions(stud_dir);
        for d in found {
            items.push(extension_item(&d, lower));
        }
        items.extend(problems.into_iter().filter_map(|p| {
            match p {
                super::discovery::DiscoveryProblem::ReservedId { id, manifest, .. } => {
                    Some(ReviewItem::ReservedId {
                        id: id.to_string(),
                        manifest: manifest
                            .strip_prefix(stud_dir.parent().unwrap_or(stud_dir))
                            .unwrap_or(&manifest)
                            .display()
                            .to_string(),
                    })
                }
                _ => None,
            }
        }));
        ProjectReview { items }
    }

    /// Whether there is anything the user must accept.
    pub fn needs_acceptance(&self) -> bool {
        self.items.iter().any(ReviewItem::needs_acceptance)
    }

    /// `sha256:<hex>` of the items that need acceptance: what the trust
    /// list records when the user accepts them.
    pub fn digest(&self) -> String {
        let accepted: Vec<&ReviewItem> =
            self.items.iter().filter(|i| i.needs_acceptance()).collect();
        let text = serde_json::to_string(&accepted).unwrap_or_default();
        Sha256Digest::of(text.as_bytes()).to_string()
    }

    /// Whether the review lists extension `d` as it is: same id, kind,
    /// version, component digest and capabilities (what it replaces aside,
    /// which is about the user's extension, not this one).
    pub fn lists(&self, d: &Discovered) -> bool {
        let wanted = extension_item(d, &[]);
        self.items.iter().any(|item| match item {
            ReviewItem::Extension { .. } => {
                let mut item = item.clone();
                if let ReviewItem::Extension { replaces, .. } = &mut item {
                    *replaces = None;
                }
                item == wanted
            }
            _ => false,
        })
    }

    /// Every item in plain words.
    pub fn lines(&self) -> Vec<String> {
        self.items.iter().flat_map(ReviewItem::describe).collect()
    }
}

fn read_json(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

fn mode_of(settings: &Value) -> Option<Mode> {
    settings
        .pointer("/securityMode/mode")
        .and_then(Value::as_str)
        .and_then(|m| m.parse().ok())
}

fn mode_items(project: &Value, global: &Value, items: &mut Vec<ReviewItem>) {
    let Some(asked) = mode_of(project) else {
        return;
    };
    let kept = mode_of(global).unwrap_or(Mode::Ask);
    if asked.is_looser_than(kept) {
        items.push(ReviewItem::ModeLoosened {
            asked: asked.to_string(),
            kept: kept.to_string(),
        });
    } else if kept.is_looser_than(asked) {
        items.push(ReviewItem::ModeStricter {
            mode: asked.to_string(),
        });
    }
}

/// `host[:port]` of a URL, and whether it is plain http.
fn url_host(url: &str) -> Option<(String, bool)> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?.to_string();
    let shown = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    };
    Some((shown, url.scheme() == "http"))
}

fn redirect_items(
    project: &Value,
    global: &Value,
    lower: &[Discovered],
    items: &mut Vec<ReviewItem>,
) {
    let Some(providers) = project.get("providers").and_then(Value::as_object) else {
        return;
    };
    for (id, config) in providers {
        let Some((host, plain_http)) = config
            .get("baseUrl")
            .and_then(Value::as_str)
            .and_then(url_host)
        else {
            continue;
        };
        let global_host = global
            .pointer(&format!("/providers/{}/baseUrl", escape_pointer(id)))
            .and_then(Value::as_str)
            .and_then(url_host)
            .map(|(h, _)| h);
        let manifest = lower.iter().find(|d| d.manifest.id.as_str() == id);
        let declared = manifest.is_some_and(|d| {
            let bare = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
            d.manifest
                .capabilities
                .network
                .iter()
                .any(|p| p.to_string() == host || p.to_string() == bare)
        });
        if global_host.as_deref() == Some(host.as_str()) || declared {
            continue;
        }
        items.push(ReviewItem::KeyRedirect {
            provider: id.clone(),
            host,
            secrets: manifest
                .map(|d| d.manifest.capabilities.secrets.clone())
                .unwrap_or_default(),
            plain_http,
        });
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The commands in a Claude Code `hooks` object, event by event.
fn hook_commands(hooks: Option<&Value>, file: &str, items: &mut Vec<ReviewItem>) {
    let Some(map) = hooks.and_then(Value::as_object) else {
        return;
    };
    for (event, groups) in map {
        let commands = groups
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter_map(|h| h.get("command").and_then(Value::as_str));
        for command in commands {
            items.push(ReviewItem::HookCommand {
                event: event.clone(),
                command: command.to_string(),
                file: file.to_string(),
            });
        }
    }
}

fn hook_items(project: &Value, lower: &[Discovered], items: &mut Vec<ReviewItem>) {
    for (key, kind) in [
        ("hooks", "hook"),
        ("loggers", "logger"),
        ("contextProviders", "context provider"),
    ] {
        let Some(map) = project.get(key).and_then(Value::as_object) else {
            continue;
        };
        for (id, config) in map {
            if config.get("disable") == Some(&Value::Bool(true)) {
                items.push(ReviewItem::Disables {
                    extension: id.clone(),
                    kind: kind.to_string(),
                });
            } else if kind == "context provider" {
                items.push(ReviewItem::ContextConfig {
                    extension: id.clone(),
                    config: config.to_string(),
                });
            } else if kind == "hook"
                && lower
                    .iter()
                    .any(|d| d.manifest.id.as_str() == id && d.manifest.kind == Kind::Hook)
            {
                items.push(ReviewItem::HookConfig {
                    extension: id.clone(),
                });
            }
        }
    }
}

fn extension_item(d: &Discovered, lower: &[Discovered]) -> ReviewItem {
    let component = match (&d.lock, &d.expected_digest) {
        (Some(lock), _) => lock.component.clone(),
        (None, Some(pinned)) => pinned.to_string(),
        (None, None) => "unreadable".into(),
    };
    ReviewItem::Extension {
        id: d.manifest.id.to_string(),
        kind: d.manifest.kind.to_string(),
        version: d.manifest.version.to_string(),
        pinned: d.lock.is_some() && d.scope == Scope::Project,
        component,
        capabilities: consent::describe(&d.manifest.capabilities),
        replaces: lower
            .iter()
            .find(|g| g.scope == Scope::Global && g.manifest.id == d.manifest.id)
            .map(|g| g.manifest.kind.to_string()),
    }
}
