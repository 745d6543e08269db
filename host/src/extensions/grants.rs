//! What the user grants beyond manifests, from settings: extra network
//! hosts per extension (and a provider's `baseUrl` host), and where each
//! declared secret's value comes from. Values are resolved here, at load,
//! and handed only to the extension that declared the name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{SandboxMode, SecretRef, Settings};
use crate::manifest::{HostPattern, Kind, Manifest};
use crate::runtime::caps::confine::ProcessConfinement;

#[derive(Debug, Default, Clone)]
pub struct UserGrants {
    network: HashMap<String, Vec<HostPattern>>,
    secrets: HashMap<String, HashMap<String, SecretRef>>,
    /// Where processes started by tools may write.
    pub processes: ProcessConfinement,
}

impl UserGrants {
    /// The grants in `settings`, and a warning for each entry that is not a
    /// host pattern (it is left out).
    pub fn from_settings(settings: &Settings) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut network: HashMap<String, Vec<HostPattern>> = HashMap::new();
        for (id, hosts) in &settings.network {
            for (i, text) in hosts.iter().enumerate() {
                match text.parse::<HostPattern>() {
                    Ok(p) => network.entry(id.clone()).or_default().push(p),
                    Err(e) => warnings.push(format!(
                        "settings.json: network.{id}[{i}]: {e}; the entry is ignored"
                    )),
                }
            }
        }
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
                secrets: settings.secrets.clone(),
                processes,
            },
            warnings,
        )
    }

    /// Hosts the user granted `manifest`'s extension: its `network` list,
    /// plus for a provider the host (and port) of its config's `baseUrl`.
    pub fn network_for(&self, manifest: &Manifest, config: Option<&Value>) -> Vec<HostPattern> {
        let mut out = self
            .network
            .get(manifest.id.as_str())
            .cloned()
            .unwrap_or_default();
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
    pub fn secrets_for(&self, manifest: &Manifest) -> HashMap<String, Result<String, String>> {
        let id = manifest.id.as_str();
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
    /// bus must redact).
    pub fn all_values<'a>(&self, manifests: impl Iterator<Item = &'a Manifest>) -> Vec<String> {
        manifests
            .flat_map(|m| self.secrets_for(m).into_values().filter_map(Result::ok))
            .collect()
    }
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
