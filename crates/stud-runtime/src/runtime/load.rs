//! Loading one extension: verify its digest, read its contract stamp and
//! imports, check them against its kind and grants, validate its config.
//! Every step fails with a [`LoadError`] naming the extension, before any
//! guest code runs. Compiling and linking wait for first use
//! ([`super::code`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::Runtime;
use super::caps::confine::ProcessConfinement;
use super::caps::http::NetAccess;
use super::caps::{Gate, HostInterface};
use super::checked_configs::ConfigNote;
use super::code::{CodeInput, ComponentBytes, DeferredCheck, LazyCode};
use super::error::LoadError;
use super::extension::Extension;
use super::host_state::{DirGrant, ExtensionContext, PROJECT_GUEST_DIR, StateSlot};
use super::inspect::ComponentInfo;
use super::linker;
use super::net::{NetLimits, NetPolicy};
use super::protected_paths::{FileGuard, ProtectedPaths};
use super::services::Services;
use crate::contract;
use crate::digest::Sha256Digest;
use crate::manifest::{HostPattern, Kind, Manifest};
use crate::scope::Scope;

/// The config of an extension without settings. A bundled tool on it
/// answers `describe` from the spec recorded in the binary.
pub(crate) const NO_SETTINGS: &str = "{}";

/// Everything needed to load one extension.
pub struct LoadSpec {
    pub manifest: Manifest,
    /// Where it was found: with its id and digest, who it is. The kernel
    /// decides by all three (a project extension never answers approvals,
    /// a name from the user's settings means one of theirs).
    pub scope: Scope,
    /// Where the bytes came from, for messages.
    pub component_path: PathBuf,
    pub bytes: ComponentBytes,
    /// The digest the bytes must have (lockfile or build-time record).
    pub expected_digest: Option<Sha256Digest>,
    /// User config; `None` means `{}`.
    pub config: Option<serde_json::Value>,
    pub dirs: Vec<DirGrant>,
    /// Files no extension may open (`protectedPaths`).
    pub protected: Arc<ProtectedPaths>,
    /// Hosts the user granted in settings (used only when the manifest
    /// says `user-hosts = true`).
    pub network: Vec<HostPattern>,
    /// Secret values resolved from settings references, by name.
    pub secrets: HashMap<String, Result<String, String>>,
    /// How processes it starts are confined (when it may start any).
    pub processes: ProcessConfinement,
    /// What one HTTP response may cost (when it may send any).
    pub net_limits: NetLimits,
    /// The host:port pairs it may open sockets to: its manifest's
    /// `sockets` with the person's grants applied.
    pub sockets: Vec<super::caps::socket::SocketGrant>,
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

    /// Check an extension and make it ready to call. Its code is read (or
    /// compiled) and linked at its first call ([`Extension::link`] does it
    /// now).
    pub fn load(self: &Arc<Self>, spec: LoadSpec) -> Result<Extension, LoadError> {
        let id = spec.manifest.id.clone();
        let kind = spec.manifest.kind;
        // A bundled component is part of this binary and its digest was
        // fixed when the binary was built: it is checked (integrity and
        // contract) when it is first used, in `code`, so an unused one
        // costs nothing. A component on disk may have changed since it was
        // installed: it is checked now, and refused before the session
        // starts.
        let (digest, info, deferred) = match (&spec.bytes, &spec.expected_digest) {
            (ComponentBytes::Embedded(_), Some(expected)) => (
                expected.clone(),
                None,
                Some(DeferredCheck {
                    manifest: spec.manifest.clone(),
                    path: spec.component_path.clone(),
                }),
            ),
            _ => {
                let digest = tracing::trace_span!("integrity").in_scope(|| {
                    check_integrity(
                        &spec.manifest,
                        &spec.bytes,
                        &spec.expected_digest,
                        &spec.component_path,
                    )
                })?;
                let info = tracing::trace_span!("verify")
                    .in_scope(|| verify(&spec.manifest, &spec.bytes, &spec.component_path))?;
                (digest, Some(info), None)
            }
        };
        // A bundled extension without settings runs on `{}`, which every
        // bundled config schema accepts (the golden-manifest test checks
        // it): its schema need not be compiled at start.
        let config = match (&spec.bytes, spec.config) {
            (ComponentBytes::Embedded(_), None) => NO_SETTINGS.to_string(),
            (_, config) => validate_config(&spec.manifest, config, &self.cache)?,
        };
        let slot = state_slot(&spec.manifest);
        if let Some(value) = spec.state {
            slot.write(value).map_err(|message| LoadError::StateCarry {
                id: id.clone(),
                message,
            })?;
        }

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
        let files = FileGuard {
            project: spec
                .dirs
                .iter()
                .find(|d| d.guest == PROJECT_GUEST_DIR)
                .map(|d| d.host.canonicalize().unwrap_or_else(|_| d.host.clone())),
            protected: spec.protected,
        };
        let ctx = Arc::new(ExtensionContext {
            id,
            kind,
            config,
            limits: spec.manifest.limits.clone(),
            slot,
            dirs: spec.dirs,
            files,
            secrets: spec.manifest.capabilities.secrets.clone(),
            secret_values: spec.secrets,
            processes: spec.processes,
            net,
            sockets: spec.sockets,
            services: spec.services,
            emits: Default::default(),
            meter: Default::default(),
        });
        let code = LazyCode::new(CodeInput {
            id: spec.manifest.id.clone(),
            kind,
            link_key: linker::link_key(kind, &spec.manifest.capabilities),
            bytes: spec.bytes,
            digest: digest.clone(),
            deferred,
        });
        Ok(Extension::new(
            self.clone(),
            spec.manifest,
            spec.scope,
            digest,
            info,
            ctx,
            code,
        ))
    }
}

/// The component's sha256, which must be the recorded one (lockfile or
/// build-time record) when there is one.
pub(super) fn check_integrity(
    manifest: &Manifest,
    bytes: &ComponentBytes,
    expected: &Option<Sha256Digest>,
    path: &std::path::Path,
) -> Result<Sha256Digest, LoadError> {
    let digest = bytes.sha256();
    match expected {
        Some(expected) if *expected != digest => Err(LoadError::Integrity {
            id: manifest.id.clone(),
            path: path.to_path_buf(),
            expected: expected.to_string(),
            actual: digest.to_string(),
        }),
        _ => Ok(digest),
    }
}

/// The checks that need no instantiation: a component, of a supported
/// contract, importing only what its kind and grants allow, exporting its
/// kind's interface.
pub(super) fn verify(
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

/// The config as JSON text, checked against the manifest's schema (or
/// found checked by this binary before: `checked_configs`).
fn validate_config(
    manifest: &Manifest,
    config: Option<serde_json::Value>,
    cache: &super::cache::CompileCache,
) -> Result<String, LoadError> {
    let config = config.unwrap_or_else(|| serde_json::json!({}));
    let fail = |message: String| LoadError::Config {
        id: manifest.id.clone(),
        message,
    };
    match &manifest.config_schema {
        Some(schema) => {
            let text = config.to_string();
            let note = ConfigNote::of(cache, &schema.to_string(), &text);
            if note.as_ref().is_some_and(ConfigNote::found) {
                tracing::debug!(ext = %manifest.id, "config found valid by this binary before");
                return Ok(text);
            }
            let validator = crate::manifest::compiled_schema::validator(schema)
                .map_err(|e| fail(format!("the schema does not compile: {e}")))?;
            if let Err(e) = validator.validate(&config) {
                let at = e.instance_path().to_string();
                return Err(fail(format!(
                    "at `{}`: {e}",
                    if at.is_empty() { "/" } else { &at }
                )));
            }
            if let Some(note) = note {
                note.write();
            }
            return Ok(text);
        }
        None => {
            if config.as_object().is_none_or(|o| !o.is_empty()) {
                return Err(fail("the extension takes no config (its manifest has no [config] schema); remove its settings".into()));
            }
        }
    }
    Ok(config.to_string())
}

fn state_slot(manifest: &Manifest) -> StateSlot {
    StateSlot::new(manifest.state.as_ref().and_then(|s| s.schema.clone()))
}
