//! Loading one extension: verify its digest, read its contract stamp and
//! imports, check them against its kind and grants, validate its config,
//! compile (or load cached code) and pre-instantiate. Every step fails with
//! a [`LoadError`] naming the extension, before any guest code runs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::Runtime;
use super::caps::confine::ProcessConfinement;
use super::caps::http::NetAccess;
use super::caps::{Gate, HostInterface};
use super::error::LoadError;
use super::extension::{Extension, KindIndices};
use super::host_state::{DirGrant, ExtensionContext, StateSlot};
use super::inspect::ComponentInfo;
use super::linker;
use super::net::{NetLimits, NetPolicy};
use super::services::Services;
use crate::contract;
use crate::digest::Sha256Digest;
use crate::manifest::{HostPattern, Kind, Manifest};

/// Everything needed to load one extension.
pub struct LoadSpec {
    pub manifest: Manifest,
    /// Where the bytes came from, for messages.
    pub component_path: PathBuf,
    pub bytes: Vec<u8>,
    /// The digest the bytes must have (lockfile or build-time record).
    pub expected_digest: Option<Sha256Digest>,
    /// User config; `None` means `{}`.
    pub config: Option<serde_json::Value>,
    pub dirs: Vec<DirGrant>,
    /// Hosts the user granted in settings (used only when the manifest
    /// says `user-hosts = true`).
    pub network: Vec<HostPattern>,
    /// Secret values resolved from settings references, by name.
    pub secrets: HashMap<String, Result<String, String>>,
    /// How processes it starts are confined (when it may start any).
    pub processes: ProcessConfinement,
    /// What one HTTP response may cost (when it may send any).
    pub net_limits: NetLimits,
    /// A state slot value to start with (a reload carries the old
    /// version's state over; it must match the new state schema).
    pub state: Option<String>,
    pub services: Arc<dyn Services>,
}

/// The exported interface of each kind's world.
pub fn api_interface(kind: Kind) -> &'static str {
    match kind {
        Kind::Provider => "provider-api",
        Kind::Tool => "tool-api",
        Kind::Hook => "hook-api",
        Kind::Ui => "ui-api",
        Kind::Logger => "logger-api",
        Kind::ContextProvider => "context-provider-api",
        Kind::StateMachine => "state-machine-api",
        Kind::Command => "command-api",
        Kind::SessionStore => "session-store-api",
    }
}

impl Runtime {
    /// Verify and compile a component without loading it (installs
    /// precompile so the first session starts from the cache).
    pub fn precompile(
        &self,
        manifest: &Manifest,
        bytes: &[u8],
        path: &std::path::Path,
    ) -> Result<super::CodeSource, LoadError> {
        verify(manifest, bytes, path)?;
        let digest = Sha256Digest::of(bytes);
        self.cache
            .load(&self.engine, bytes, &digest)
            .map(|(_, source)| source)
            .map_err(|e| LoadError::Compile {
                id: manifest.id.clone(),
                message: format!("{e:#}"),
            })
    }

    pub fn load(self: &Arc<Self>, spec: LoadSpec) -> Result<Extension, LoadError> {
        let id = spec.manifest.id.clone();
        let kind = spec.manifest.kind;
        let digest = tracing::trace_span!("integrity").in_scope(|| Sha256Digest::of(&spec.bytes));
        if let Some(expected) = spec.expected_digest.as_ref().filter(|e| **e != digest) {
            return Err(LoadError::Integrity {
                id,
                path: spec.component_path,
                expected: expected.to_string(),
                actual: digest.to_string(),
            });
        }

        let info = tracing::trace_span!("verify")
            .in_scope(|| verify(&spec.manifest, &spec.bytes, &spec.component_path))?;
        let config = validate_config(&spec.manifest, spec.config)?;
        let slot = state_slot(&spec.manifest)?;
        if let Some(value) = spec.state {
            slot.write(value).map_err(|message| LoadError::StateCarry {
                id: id.clone(),
                message,
            })?;
        }

        let compile = tracing::trace_span!("code", source = tracing::field::Empty);
        let (component, code_source) = compile
            .in_scope(|| self.cache.load(&self.engine, &spec.bytes, &digest))
            .map_err(|e| LoadError::Compile {
                id: id.clone(),
                message: format!("{e:#}"),
            })?;
        compile.record("source", code_source.as_str());
        drop(compile);
        let _link = tracing::trace_span!("link").entered();
        let linker = self
            .linker(linker::link_key(kind, &spec.manifest.capabilities))
            .map_err(|e| LoadError::Link {
                id: id.clone(),
                message: format!("{e:#}"),
            })?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Link {
                id: id.clone(),
                message: format!("{e:#}"),
            })?;
        let indices = KindIndices::new(kind, &pre).map_err(|e| LoadError::Link {
            id: id.clone(),
            message: format!("{e:#}"),
        })?;

        let caps = &spec.manifest.capabilities;
        let net = (!caps.network.is_empty() || caps.user_hosts).then(|| {
            Arc::new(NetAccess::new(
                NetPolicy::new(
                    spec.manifest.id.clone(),
                    caps.network.clone(),
                    spec.network,
                    caps.user_hosts,
                ),
                spec.net_limits,
            ))
        });
        let ctx = Arc::new(ExtensionContext {
            id,
            kind,
            config,
            limits: spec.manifest.limits.clone(),
            slot,
            dirs: spec.dirs,
            secrets: spec.manifest.capabilities.secrets.clone(),
            secret_values: spec.secrets,
            processes: spec.processes,
            net,
            services: spec.services,
            emits: Default::default(),
        });
        Ok(Extension::new(
            self.clone(),
            spec.manifest,
            digest,
            code_source,
            info,
            ctx,
            pre,
            indices,
        ))
    }
}

/// The checks that need no instantiation: a component, of a supported
/// contract, importing only what its kind and grants allow, exporting its
/// kind's interface.
fn verify(
    manifest: &Manifest,
    bytes: &[u8],
    path: &std::path::Path,
) -> Result<ComponentInfo, LoadError> {
    let id = manifest.id.clone();
    let kind = manifest.kind;
    let info = ComponentInfo::inspect(bytes).map_err(|detail| LoadError::NotAComponent {
        id: id.clone(),
        path: path.to_path_buf(),
        detail,
    })?;
    info.check_contract()
        .map_err(|built_for| LoadError::ContractUnsupported {
            id: id.clone(),
            built_for,
            supported: contract::supported_text(),
        })?;
    check_imports(manifest, &info)?;
    for interface in ["lifecycle", api_interface(kind)] {
        if !info.exports_interface(interface) {
            return Err(LoadError::MissingExport {
                id: id.clone(),
                kind: kind.to_string(),
                interface: format!("{}/{interface}", contract::PACKAGE),
                macro_kind: kind.as_str().replace('-', "_"),
            });
        }
    }
    Ok(info)
}

/// Refuse imports the kind may not have or the manifest did not request.
fn check_imports(manifest: &Manifest, info: &ComponentInfo) -> Result<(), LoadError> {
    for name in info.stud_imports() {
        let interface = format!("{}/{name}", contract::PACKAGE);
        let Some(iface) = HostInterface::from_name(name) else {
            return Err(LoadError::ImportNotAllowed {
                id: manifest.id.clone(),
                kind: manifest.kind.to_string(),
                interface,
            });
        };
        match iface.gate(manifest.kind, &manifest.capabilities) {
            Gate::Always => {}
            Gate::NotInWorld => {
                return Err(LoadError::ImportNotAllowed {
                    id: manifest.id.clone(),
                    kind: manifest.kind.to_string(),
                    interface,
                });
            }
            Gate::Capability {
                name,
                manifest_line,
            } => {
                return Err(LoadError::CapabilityNotRequested {
                    id: manifest.id.clone(),
                    interface,
                    capability: name.to_string(),
                    manifest_line: manifest_line.to_string(),
                });
            }
            Gate::Unavailable { why } => {
                return Err(LoadError::Link {
                    id: manifest.id.clone(),
                    message: format!("it imports `{interface}`: {why}"),
                });
            }
        }
    }
    Ok(())
}

/// The config as JSON text, checked against the manifest's schema.
fn validate_config(
    manifest: &Manifest,
    config: Option<serde_json::Value>,
) -> Result<String, LoadError> {
    let config = config.unwrap_or_else(|| serde_json::json!({}));
    let fail = |message: String| LoadError::Config {
        id: manifest.id.clone(),
        message,
    };
    match &manifest.config_schema {
        Some(schema) => {
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| fail(format!("the schema does not compile: {e}")))?;
            if let Err(e) = validator.validate(&config) {
                let at = e.instance_path().to_string();
                return Err(fail(format!(
                    "at `{}`: {e}",
                    if at.is_empty() { "/" } else { &at }
                )));
            }
        }
        None => {
            if config.as_object().is_none_or(|o| !o.is_empty()) {
                return Err(fail("the extension takes no config (its manifest has no [config] schema); remove its settings".into()));
            }
        }
    }
    Ok(config.to_string())
}

fn state_slot(manifest: &Manifest) -> Result<StateSlot, LoadError> {
    let schema = match manifest.state.as_ref().and_then(|s| s.schema.as_ref()) {
        Some(schema) => Some(Arc::new(jsonschema::validator_for(schema).map_err(
            |e| LoadError::Config {
                id: manifest.id.clone(),
                message: format!("its state schema does not compile: {e}"),
            },
        )?)),
        None => None,
    };
    Ok(StateSlot::new(schema))
}
