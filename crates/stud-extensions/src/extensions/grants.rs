//! What the user grants beyond manifests, from settings: extra network
//! hosts per extension (and a provider's `baseUrl` host), and where each
//! declared secret's value comes from. Values are resolved here, at load,
//! and handed only to the extension that declared the name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::scope::Scope;
use std::time::Duration;

use crate::config::{
    ExtensionBudget, ExtensionConfigs, Layered, NetworkSettings, SandboxMode, SecretRef, Settings,
};
use crate::manifest::{HostPattern, Kind, Manifest};
use crate::runtime::caps::confine::ProcessConfinement;
use crate::runtime::net::NetLimits;
use crate::runtime::protected_paths::ProtectedPaths;

#[derive(Debug, Default, Clone)]
pub struct UserGrants {
    /// From the global settings: for bundled and global extensions only.
    network: HashMap<String, Vec<HostPattern>>,
    /// From an accepted project's settings: for any extension of that id.
    project_network: HashMap<String, Vec<HostPattern>>,
    secrets: HashMap<String, HashMap<String, SecretRef>>,
    /// Where processes started by tools may write.
    pub processes: ProcessConfinement,
    /// What one HTTP response may cost (`runtime.network`).
    pub net_limits: NetLimits,
    /// Files no extension may open (`protectedPaths`).
    pub protected: Arc<ProtectedPaths>,
    /// The person's budgets per extension id (`budget.extensions`).
    pub budgets: HashMap<String, ExtensionBudget>,
    /// The person's socket grants per extension id (`sockets`, global):
    /// exact hosts with their ports.
    pub sockets: HashMap<String, Vec<(HostPattern, u16)>>,
}

impl UserGrants {
    /// `limits` with the person's budget for extension `id` applied: the
    /// lower of the manifest's limit and the settings' wins.
    pub fn tighten_limits(&self, id: &str, limits: &mut crate::manifest::Limits) {
        let Some(b) = self.budgets.get(id) else {
            return;
        };
        let lower = |mine: Option<u32>, theirs: Option<u32>| match (mine, theirs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        limits.cpu_ms_per_turn = lower(limits.cpu_ms_per_turn, b.cpu_ms_per_turn);
        limits.tokens_per_session = lower(limits.tokens_per_session, b.tokens_per_session);
    }

    /// What `manifest`'s `socket` import may reach: each host its
    /// manifest names, and each `host:port` the person granted that the
    /// manifest covers (marked as the person's: they may be internal
    /// addresses). The person's grants are theirs for their own
    /// extensions of that id (bundled or global), never for a project's
    /// that takes the same id: the grant follows who the extension is, not
    /// its name.
    ///
    /// A session store's `url` in the person's global settings
    /// (`global_config`, never a project's) is their grant of exactly that
    /// host and port, as `sockets.<id>` would be.
    pub fn sockets_for(
        &self,
        manifest: &Manifest,
        scope: Scope,
        global_config: Option<&Value>,
    ) -> Vec<crate::runtime::caps::socket::SocketGrant> {
        use crate::runtime::caps::socket::SocketGrant;
        let requests = &manifest.capabilities.sockets;
        let persons = (scope != Scope::Project)
            .then(|| self.sockets.get(manifest.id.as_str()))
            .flatten();
        let store_url = (scope != Scope::Project && manifest.kind == Kind::SessionStore)
            .then(|| {
                global_config?
                    .get("url")?
                    .as_str()
                    .and_then(store_url_grant)
            })
            .flatten();
        let mut out: Vec<SocketGrant> = persons
            .into_iter()
            .flatten()
            .map(|(host, port)| (host.clone(), *port, None))
            .chain(store_url)
            .filter(|(host, port, _)| requests.iter().any(|r| r.covers(&host.host, *port)))
            .map(|(host, port, roots)| SocketGrant {
                host,
                port,
                by_person: true,
                roots,
            })
            .collect();
        out.extend(requests.iter().filter_map(|r| {
            Some(SocketGrant {
                host: r.host.clone()?,
                port: r.port?,
                by_person: false,
                roots: None,
            })
        }));
        out
    }

    /// The grants of the layered settings (network grants kept apart by
    /// scope), and a warning for each entry that is not a host pattern
    /// (it is left out).
    pub fn from_layers(layered: &Layered) -> (Self, Vec<String>) {
        let (mut grants, mut warnings) = UserGrants::from_settings(&layered.settings);
        grants.network = host_patterns(&layered.global_network, &mut warnings);
        grants.project_network = host_patterns(&layered.project_network, &mut warnings);
        (grants, warnings)
    }

    /// The grants in one settings document, all of it the user's own.
    pub fn from_settings(settings: &Settings) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let network = host_patterns(&settings.network, &mut warnings);
        let sandbox = &settings.runtime.process_sandbox;
        let processes = match sandbox.mode {
            SandboxMode::Off => ProcessConfinement::Off,
            SandboxMode::WriteProject => {
                let mut writable = Vec::new();
                for (i, path) in sandbox.writable.iter().enumerate() {
                    let path = expand_home(path);
                    if path.is_absolute() {
                        writable.push(path);
                    } else {
                        warnings.push(format!(
                            "settings.json: runtime.processSandbox.writable[{i}] `{}` is not an absolute path (or `~/...`); the entry is ignored",
                            path.display()
                        ));
                    }
                }
                ProcessConfinement::WriteProject { writable }
            }
        };
        (
            UserGrants {
                network,
                project_network: HashMap::new(),
                secrets: settings.secrets.clone(),
                processes,
                net_limits: net_limits(&settings.runtime.network),
                protected: Arc::new(protected_paths(settings, &mut warnings)),
                budgets: settings.budget.extensions.clone(),
                sockets: socket_grants(&settings.sockets, &mut warnings),
            },
            warnings,
        )
    }

    /// Hosts the user granted `manifest`'s extension (from `scope`): its
    /// `network` list (the global settings' only for bundled and global
    /// extensions: a project extension named `anthropic` gets none of the
    /// global `anthropic`'s hosts), plus for a provider the host (and port)
    /// of its config's `baseUrl`.
    pub fn network_for(
        &self,
        manifest: &Manifest,
        scope: Scope,
        config: Option<&Value>,
    ) -> Vec<HostPattern> {
        let id = manifest.id.as_str();
        let mut out = Vec::new();
        if scope != Scope::Project {
            out.extend(self.network.get(id).into_iter().flatten().cloned());
        }
        out.extend(self.project_network.get(id).into_iter().flatten().cloned());
        if manifest.kind == Kind::Provider
            && let Some(p) = config
                .and_then(|c| c.get("baseUrl"))
                .and_then(Value::as_str)
                .and_then(base_url_host)
        {
            out.push(p);
        }
        out
    }

    /// Each declared secret that has a value: from the reference in
    /// settings, else from the environment variable of the same name.
    /// `Err` explains a reference that does not resolve.
    /// Project extensions get none: a secret is the user's, given to the
    /// extensions the user installed, never to one a repository brings
    /// under the same id.
    pub fn secrets_for(
        &self,
        manifest: &Manifest,
        scope: Scope,
    ) -> HashMap<String, Result<String, String>> {
        let id = manifest.id.as_str();
        if scope == Scope::Project {
            return manifest
                .capabilities
                .secrets
                .iter()
                .map(|name| {
                    (
                        name.clone(),
                        Err(format!(
                            "extension `{id}` comes from the project's .stud folder, and project extensions get no secrets; install it yourself (`stud ext install <source>`) to give it {name}"
                        )),
                    )
                })
                .collect();
        }
        let refs = self.secrets.get(id);
        let mut out = HashMap::new();
        for name in &manifest.capabilities.secrets {
            let resolved = match refs.and_then(|r| r.get(name)) {
                Some(SecretRef::Env(var)) => match env_value(var) {
                    Some(v) => Ok(v),
                    None => Err(format!(
                        "`secrets.{id}.{name}` in settings.json names the environment variable {var}, which is not set"
                    )),
                },
                Some(SecretRef::File(path)) => read_secret_file(path).map_err(|e| {
                    format!(
                        "`secrets.{id}.{name}` in settings.json names the file {}, which cannot be read: {e}",
                        path.display()
                    )
                }),
                None => match env_value(name) {
                    Some(v) => Ok(v),
                    None => continue,
                },
            };
            out.insert(name.clone(), resolved);
        }
        out
    }

    /// Every secret value these grants resolve for `manifests` (what the
    /// bus must redact), as if each were the user's own.
    pub fn all_values<'a>(&self, manifests: impl Iterator<Item = &'a Manifest>) -> Vec<String> {
        manifests
            .flat_map(|m| {
                self.secrets_for(m, Scope::Global)
                    .into_values()
                    .filter_map(Result::ok)
            })
            .collect()
    }
}

fn net_limits(s: &NetworkSettings) -> NetLimits {
    let d = NetLimits::default();
    NetLimits {
        header_timeout: s
            .header_timeout_ms
            .map_or(d.header_timeout, |ms| Duration::from_millis(ms.max(1))),
        response_timeout: s
            .response_timeout_ms
            .map_or(d.response_timeout, |ms| Duration::from_millis(ms.max(1))),
        max_response_bytes: s.max_response_bytes.unwrap_or(d.max_response_bytes).max(1),
    }
}

fn host_patterns(
    grants: &HashMap<String, Vec<String>>,
    warnings: &mut Vec<String>,
) -> HashMap<String, Vec<HostPattern>> {
    let mut network: HashMap<String, Vec<HostPattern>> = HashMap::new();
    for (id, hosts) in grants {
        for (i, text) in hosts.iter().enumerate() {
            match text.parse::<HostPattern>() {
                Ok(p) => network.entry(id.clone()).or_default().push(p),
                Err(e) => warnings.push(format!(
                    "settings.json: network.{id}[{i}]: {e}; the entry is ignored"
                )),
            }
        }
    }
    network
}

fn env_value(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

/// `~/x` -> `$HOME/x`.
fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

fn read_secret_file(path: &Path) -> std::io::Result<String> {
    let path = expand_home(path);
    let text = std::fs::read_to_string(path)?;
    let value = text.trim();
    if value.is_empty() {
        return Err(std::io::Error::other("the file is empty"));
    }
    Ok(value.to_string())
}

/// `http://127.0.0.1:8080/v1` -> `127.0.0.1:8080` (exact host and port).
fn base_url_host(url: &str) -> Option<HostPattern> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .map(|h| format!("[{h}]"))
        .unwrap_or_else(|| host.to_string());
    format!("{host}:{port}").parse().ok()
}

/// The host and port of a session store's `url` (`postgres://user@host:port/db`;
/// 5432 when it names none), as an exact grant, with the TLS roots its
/// `sslrootcert` names (`~/` allowed) as the only ones trusted for it.
fn store_url_grant(url: &str) -> Option<(HostPattern, u16, Option<PathBuf>)> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    let port = url.port().unwrap_or(5432);
    let pattern: HostPattern = format!("{host}:{port}").parse().ok()?;
    let roots = url
        .query_pairs()
        .find(|(k, _)| k == "sslrootcert")
        .map(|(_, v)| expand_home(Path::new(v.as_ref())));
    (!pattern.wildcard).then_some((pattern, port, roots))
}

/// The protected-path policy: the defaults, `protectedPaths.patterns` and
/// the patterns the `protect-paths` guard was configured with (so a file
/// the guard is told to protect is protected where it is opened too). A
/// pattern that is not a glob is left out with a warning; the rest apply.
fn protected_paths(settings: &Settings, warnings: &mut Vec<String>) -> ProtectedPaths {
    let guard = settings
        .hooks
        .get("protect-paths")
        .and_then(|c| c.get("patterns"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let mut patterns: Vec<&str> = Vec::new();
    for p in settings
        .protected_paths
        .patterns
        .iter()
        .map(String::as_str)
        .chain(guard)
    {
        match ProtectedPaths::check_pattern(p) {
            Ok(()) => patterns.push(p),
            Err(e) => warnings.push(format!("settings.json: {e}; it is left out")),
        }
    }
    let allow = settings.protected_paths.allow.iter().map(String::as_str);
    ProtectedPaths::new(patterns, allow).unwrap_or_default()
}

/// The bundled `protect-paths` guard checks arguments with patterns of its
/// own; it is handed the user's exact grants (`protectedPaths.allow`) so
/// a file the host policy lets through is not denied by the guard.
pub fn with_guard_grants(mut configs: ExtensionConfigs, allow: &[String]) -> ExtensionConfigs {
    if allow.is_empty() {
        return configs;
    }
    if let Value::Object(map) = configs.entry(Kind::Hook, "protect-paths") {
        map.insert(
            "allow".into(),
            Value::Array(allow.iter().cloned().map(Value::String).collect()),
        );
    }
    configs
}

/// `sockets.<id>` entries: an exact host and a port each; anything else
/// grants nothing and is named in a warning.
fn socket_grants(
    entries: &HashMap<String, Vec<String>>,
    warnings: &mut Vec<String>,
) -> HashMap<String, Vec<(HostPattern, u16)>> {
    entries
        .iter()
        .map(|(id, texts)| {
            let grants = texts
                .iter()
                .filter_map(|text| {
                    let exact = text
                        .parse::<HostPattern>()
                        .ok()
                        .filter(|p| !p.wildcard)
                        .and_then(|p| p.port.map(|port| (p, port)));
                    if exact.is_none() {
                        warnings.push(format!(
                            "settings.json: sockets.{id}: \"{text}\" is not a host and port (e.g. \"db.internal:5432\"); it grants nothing"
                        ));
                    }
                    exact
                })
                .collect();
            (id.clone(), grants)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_grants_its_host_and_port() {
        let p = base_url_host("http://127.0.0.1:8080/v1").unwrap();
        assert!(p.matches("127.0.0.1", 8080) && !p.matches("127.0.0.1", 8081));
        let p = base_url_host("https://api.groq.com/openai/v1").unwrap();
        assert!(p.matches("api.groq.com", 443));
        assert!(base_url_host("not a url").is_none());
    }
}
