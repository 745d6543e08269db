//! Loading discovered extensions into the runtime with their grants. A
//! failing extension is reported and left out; the others load.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::discovery::{ComponentSource, Discovered};
use super::grants::UserGrants;
use super::scope::Scope;
use crate::manifest::{ExtensionId, FsDir};
use crate::paths::StudHome;
use crate::runtime::host_state::{DATA_GUEST_DIR, DirGrant, PROJECT_GUEST_DIR};
use crate::runtime::services::Services;
use crate::runtime::{Extension, LoadError, LoadSpec, Runtime};

/// What loading produced.
#[derive(Default)]
pub struct LoadReport {
    pub loaded: Vec<Arc<Extension>>,
    pub failed: Vec<(ExtensionId, LoadError)>,
    /// Loaded, but not as configured (a fallback was used).
    pub warnings: Vec<String>,
}

/// Everything extensions are loaded against.
pub struct Registry {
    pub runtime: Arc<Runtime>,
    pub home: StudHome,
    /// The session's working directory (the `project` grant).
    pub project_dir: PathBuf,
    pub services: Arc<dyn Services>,
    /// Config per extension id (from settings).
    pub configs: crate::config::ExtensionConfigs,
    /// Global config per extension id, used when the project's config of
    /// an extension fails its schema.
    pub fallback_configs: crate::config::ExtensionConfigs,
    /// Hosts and secrets granted in settings.
    pub grants: UserGrants,
}

impl Registry {
    /// Load every discovered extension: one lane per core, each taking the
    /// next extension from a queue that puts the costly ones first
    /// (`load_order`), so no lane is left with a slow load at the end
    /// while the other idles. The lanes run where a start's work runs
    /// (`runtime::start_work`: on the workers, idle that early, rather
    /// than on blocking threads started for them).
    pub async fn load_all(self: &Arc<Self>, found: Vec<Discovered>) -> LoadReport {
        let mut report = LoadReport::default();
        let found: Arc<[Discovered]> = found.into();
        let parent = tracing::Span::current();
        let queue = Arc::new(Mutex::new(load_order(&found, &self.configs)));
        let lanes = crate::runtime::cores::cores().min(found.len());
        let tasks: Vec<_> = (0..lanes)
            .map(|_| {
                let (registry, found, queue, parent) =
                    (self.clone(), found.clone(), queue.clone(), parent.clone());
                crate::runtime::start_work::spawn(move || {
                    registry.load_lane(&found, &queue, &parent)
                })
            })
            .collect();
        let mut results: Vec<Option<Result<Extension, LoadError>>> =
            found.iter().map(|_| None).collect();
        for task in tasks {
            // A lane that panicked outside a load leaves its results `None`.
            if let Ok(done) = task.await {
                for (i, r) in done {
                    results[i] = r;
                }
            }
        }
        for (d, result) in found.iter().zip(results) {
            let id = d.manifest.id.clone();
            match result {
                Some(Ok(ext)) => report.loaded.push(Arc::new(ext)),
                Some(Err(e @ LoadError::Config { .. })) => match self.with_global_config(d).await {
                    Some(Ok(ext)) => {
                        report.warnings.push(format!(
                            "{e}; the project's config of `{id}` is ignored and the global one (or, without one, the extension's defaults) is used"
                        ));
                        report.loaded.push(Arc::new(ext));
                    }
                    _ => report.failed.push((id, e)),
                },
                Some(Err(e)) => report.failed.push((id, e)),
                None => report.failed.push((
                    id.clone(),
                    LoadError::Compile {
                        id,
                        message: "loader panicked".into(),
                    },
                )),
            }
        }
        drop_orphans(&mut report);
        report
    }

    /// One lane: load from `queue` until it is empty.
    fn load_lane(
        &self,
        found: &[Discovered],
        queue: &Mutex<VecDeque<usize>>,
        parent: &tracing::Span,
    ) -> Vec<(usize, Option<Result<Extension, LoadError>>)> {
        drain(queue, |i| {
            let d = &found[i];
            tracing::debug_span!(parent: parent, "load", ext = %d.manifest.id).in_scope(|| {
                self.spec(d, self.config_of(d).cloned())
                    .and_then(|spec| self.runtime.load(spec))
            })
        })
    }

    /// Load again with the global scope's config (none: the extension's
    /// defaults), when that differs from the one that failed. So a bad
    /// project value cannot switch off an extension such as a guard.
    async fn with_global_config(&self, d: &Discovered) -> Option<Result<Extension, LoadError>> {
        let id = d.manifest.id.as_str();
        let global = self.fallback_configs.get(d.manifest.kind, id);
        if self.config_of(d) == global {
            return None;
        }
        let spec = self.spec(d, global.cloned());
        let runtime = self.runtime.clone();
        tokio::task::spawn_blocking(move || spec.and_then(|s| runtime.load(s)))
            .await
            .ok()
    }

    /// The settings' config of `d`, from the section of its kind.
    pub fn config_of(&self, d: &Discovered) -> Option<&serde_json::Value> {
        self.configs.get(d.manifest.kind, d.manifest.id.as_str())
    }

    /// The load request for one discovered extension: bytes, digest to
    /// check, and directory grants resolved to real paths.
    pub fn spec(
        &self,
        d: &Discovered,
        config: Option<serde_json::Value>,
    ) -> Result<LoadSpec, LoadError> {
        let bytes = d.read_bytes().map_err(|source| LoadError::Read {
            id: d.manifest.id.clone(),
            path: d.component_path.clone(),
            source,
        })?;
        if d.session_pin
            && let Some(pinned) = &d.expected_digest
        {
            let actual = crate::digest::Sha256Digest::of(&bytes);
            if &actual != pinned {
                return Err(LoadError::ChangedSincePinned {
                    id: d.manifest.id.clone(),
                    path: d.component_path.clone(),
                    pinned: pinned.to_string(),
                    actual: actual.to_string(),
                });
            }
        }
        let mut manifest = d.manifest.clone();
        self.grants
            .tighten_limits(manifest.id.as_str(), &mut manifest.limits);
        Ok(LoadSpec {
            manifest,
            scope: d.scope,
            component_path: d.component_path.clone(),
            bytes,
            expected_digest: d.expected_digest.clone(),
            config: config.clone(),
            dirs: self.dir_grants(d),
            protected: self.grants.protected.clone(),
            network: self
                .grants
                .network_for(&d.manifest, d.scope, config.as_ref()),
            secrets: self.grants.secrets_for(&d.manifest, d.scope),
            processes: self.grants.processes.clone(),
            net_limits: self.grants.net_limits,
            sockets: self.grants.sockets_for(
                &d.manifest,
                d.scope,
                self.fallback_configs
                    .get(d.manifest.kind, d.manifest.id.as_str()),
            ),
            state: None,
            services: self.services.clone(),
        })
    }

    /// An extension's private folder, bound to where it came from: a
    /// project extension named like a global one never sees the global
    /// one's data (sessions, logs), and projects never share theirs.
    fn data_dir(&self, d: &Discovered) -> PathBuf {
        match d.scope {
            Scope::Project => {
                let key = crate::digest::Sha256Digest::of(
                    self.project_dir.as_os_str().as_encoded_bytes(),
                )
                .to_string();
                let hex = key.trim_start_matches("sha256:");
                self.home
                    .root()
                    .join("data")
                    .join("project")
                    .join(&hex[..16.min(hex.len())])
                    .join(d.manifest.id.as_str())
            }
            Scope::Bundled | Scope::Global => self.home.data_dir(&d.manifest.id),
        }
    }

    fn dir_grants(&self, d: &Discovered) -> Vec<DirGrant> {
        d.manifest
            .capabilities
            .filesystem
            .iter()
            .filter_map(|req| {
                let (host, guest) = match req.dir {
                    FsDir::Project => (self.project_dir.clone(), PROJECT_GUEST_DIR),
                    FsDir::Data => {
                        let dir = self.data_dir(d);
                        std::fs::create_dir_all(&dir).ok()?;
                        (dir, DATA_GUEST_DIR)
                    }
                };
                Some(DirGrant {
                    host,
                    guest,
                    access: req.access,
                })
            })
            .collect()
    }
}

/// The order loads are taken in: the costly ones first, each kind of
/// cost in discovery's order. A component read from a file is hashed and
/// parsed whole; a config is checked against a schema compiled for it
/// (the first compile in a process costs some 0.3-0.6 ms,
/// docs/benchmarks.md); a bundled extension without settings is a few
/// microseconds of bookkeeping.
fn load_order(found: &[Discovered], configs: &crate::config::ExtensionConfigs) -> VecDeque<usize> {
    let cost = |d: &Discovered| {
        let from_file = matches!(d.source, ComponentSource::File(_));
        let checks_config = d.manifest.config_schema.is_some()
            && configs
                .get(d.manifest.kind, d.manifest.id.as_str())
                .is_some();
        u8::from(from_file) * 2 + u8::from(checks_config)
    };
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&found[i])));
    order.into()
}

/// Take indices from `queue` until it is empty, each through `f`. A call
/// that panics is `None` for its index alone: the lane goes on.
fn drain<T>(queue: &Mutex<VecDeque<usize>>, f: impl Fn(usize) -> T) -> Vec<(usize, Option<T>)> {
    let mut done = Vec::new();
    loop {
        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let Some(i) = next else { break };
        done.push((i, std::panic::catch_unwind(AssertUnwindSafe(|| f(i))).ok()));
    }
    done
}

/// Leave out every loaded extension whose dependency failed to load,
/// transitively (discovery only knew the dependency was there).
fn drop_orphans(report: &mut LoadReport) {
    loop {
        let failed: std::collections::HashSet<ExtensionId> =
            report.failed.iter().map(|(id, _)| id.clone()).collect();
        let orphan = report.loaded.iter().position(|ext| {
            ext.manifest
                .dependencies
                .iter()
                .any(|d| failed.contains(&d.id))
        });
        let Some(at) = orphan else { return };
        let ext = report.loaded.remove(at);
        let dependency = ext
            .manifest
            .dependencies
            .iter()
            .find(|d| failed.contains(&d.id))
            .map(|d| d.id.clone())
            .unwrap_or_else(|| ext.id().clone());
        report.failed.push((
            ext.id().clone(),
            LoadError::DependencyFailed {
                id: ext.id().clone(),
                dependency,
            },
        ));
    }
}

/// The project directory for a session started in `cwd`.
pub fn project_dir(cwd: &Path) -> PathBuf {
    cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::ProjectScope;
    use crate::extensions::discovery::Discovery;
    use crate::manifest::Kind;

    /// A load that panics fails alone: the lane loads the rest of the
    /// queue, and the others' results are kept.
    #[test]
    fn a_panicking_load_fails_alone() {
        let queue = Mutex::new(VecDeque::from(vec![0, 1, 2, 3]));
        let done = drain(&queue, |i| {
            assert_ne!(i, 2, "a load that panics");
            i * 10
        });
        assert_eq!(
            done,
            vec![(0, Some(0)), (1, Some(10)), (2, None), (3, Some(30))]
        );
        assert!(queue.lock().unwrap().is_empty());
    }

    /// A component read from a file goes first, then an extension whose
    /// settings are checked against its schema; the rest keep discovery's
    /// order.
    #[test]
    fn costly_loads_are_taken_first() {
        let home = tempfile::tempdir().unwrap();
        let mut found = Discovery::scan(&StudHome::at(home.path()), &ProjectScope::None).found;
        let at = |found: &[Discovered], id: &str| {
            found
                .iter()
                .position(|d| d.manifest.id.as_str() == id)
                .unwrap()
        };
        let read = at(&found, "read");
        found[read].source = ComponentSource::File(home.path().join("read.wasm"));
        let configs: crate::config::ExtensionConfigs = [(
            (Kind::Provider, "openai-compatible".to_string()),
            serde_json::json!({"baseUrl": "http://127.0.0.1:1/v1"}),
        )]
        .into_iter()
        .collect();
        let order: Vec<usize> = load_order(&found, &configs).into();
        assert_eq!(order[0], read);
        assert_eq!(order[1], at(&found, "openai-compatible"));
        let rest: Vec<usize> = (0..found.len())
            .filter(|&i| i != read && i != at(&found, "openai-compatible"))
            .collect();
        assert_eq!(order[2..], rest[..]);
    }
}
