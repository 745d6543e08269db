//! Hot reload at stage boundaries. A change on disk (or `/reload`) makes
//! the reloader look for loaded extensions whose component bytes changed;
//! each is verified and compiled in the background with the old version's
//! state slot carried over (checked against the new state schema). The
//! session swaps finished ones in only at a stage boundary, honouring the
//! extension's declared reload behaviour; a reload that fails keeps the
//! old version and says why. Every step is an event. Each rescan
//! pins what it reads (`discovery::pinned`): what is compiled is the
//! version announced by `extension.reload.requested`, never bytes swapped
//! in between. A project's extension reloads only as the project's
//! accepted trust review lists it (`extensions::accepted`): a change a
//! `git pull` brings is not run unreviewed.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::events::Bus;
use crate::digest::Sha256Digest;
use crate::extensions::accepted::Accepted;
use crate::extensions::{Discovery, ProjectScope, Registry, Scope};
use crate::manifest::{Manifest, ReloadBehavior};
use crate::paths::StudHome;
use crate::runtime::Extension;
use stud_protocol::events::KernelEvent;

/// A finished reload waiting for its boundary.
pub struct Ready {
    pub ext: Arc<Extension>,
    pub from: Sha256Digest,
}

pub struct Reloader {
    registry: Arc<Registry>,
    home: StudHome,
    project: ProjectScope,
    bus: Bus,
    runtime: tokio::runtime::Handle,
    /// What serves each id now.
    loaded: Mutex<HashMap<String, Arc<Extension>>>,
    /// Compiles started and not yet finished.
    in_flight: Mutex<Vec<Job>>,
    /// The digest each id is moving to, from the moment its compile starts
    /// until it is swapped in, refused or fails. A change is compiled once
    /// however many file events announce it.
    pending: Mutex<HashMap<String, Sha256Digest>>,
    /// What failed to load, so the same broken files are reported once.
    failed: Mutex<HashMap<String, Failed>>,
    /// Extensions that appeared during the session, announced once each.
    new_seen: Mutex<HashSet<String>>,
    /// Project versions refused as unreviewed, announced once each (until
    /// `/reload` looks again).
    unreviewed: Mutex<HashSet<(String, Sha256Digest)>>,
    /// The scope each loaded id came from: its grants, secrets and data
    /// are bound to it, so a version from another scope is a different
    /// extension, not a reload.
    scopes: HashMap<String, Scope>,
}

/// A component and manifest that failed to load together.
struct Failed {
    digest: Sha256Digest,
    manifest: Manifest,
}

/// A reload being compiled.
struct Job {
    id: String,
    digest: Sha256Digest,
    manifest: Manifest,
    handle: JoinHandle<Result<Extension, String>>,
}

impl Reloader {
    pub fn new(
        registry: Arc<Registry>,
        home: StudHome,
        project: ProjectScope,
        bus: Bus,
        loaded: &[Arc<Extension>],
        scopes: HashMap<String, Scope>,
    ) -> Arc<Self> {
        Arc::new(Reloader {
            registry,
            home,
            project,
            bus,
            runtime: tokio::runtime::Handle::current(),
            loaded: Mutex::new(
                loaded
                    .iter()
                    .map(|e| (e.id().to_string(), e.clone()))
                    .collect(),
            ),
            in_flight: Mutex::default(),
            pending: Mutex::default(),
            failed: Mutex::default(),
            new_seen: Mutex::default(),
            unreviewed: Mutex::default(),
            scopes,
        })
    }

    /// The scope folders to watch.
    pub fn roots(&self) -> Vec<std::path::PathBuf> {
        let mut roots = vec![self.home.root().to_path_buf()];
        if let ProjectScope::Trusted(root) = &self.project {
            roots.push(root.clone());
        }
        // Development folders: `stud ext build` replaces the component at
        // their top level (their `target/` is not watched).
        if let Ok(links) = crate::extensions::dev::DevLinks::load(self.home.root()) {
            roots.extend(links.folders);
        }
        roots
    }

    /// Look for changed components and start compiling them, each with
    /// its current state slot value. `/reload` passes `retry_failed` so
    /// bytes that failed before (perhaps for a reason outside them, like
    /// a setting) are tried again.
    pub fn rescan(&self, retry_failed: bool) {
        let discovery = Discovery::scan(&self.home, &self.project);
        let mut failures = Vec::new();
        {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            if retry_failed {
                failed.clear();
                self.unreviewed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear();
            }
            // Read when a project extension changed, once per scan.
            let mut accepted: Option<Accepted> = None;
            // Read under `pending`: a swap updates `loaded` before it
            // clears `pending`, so a change is never seen as new twice.
            let loaded = self
                .loaded
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            for d in &discovery.found {
                // Commands are instantiated at use (`/reload` forgets them).
                if d.manifest.kind == crate::manifest::Kind::Command {
                    continue;
                }
                let id = d.manifest.id.to_string();
                let Some(current) = loaded.get(&id) else {
                    // A running session keeps the extension set it started
                    // with (tools, hooks and subscribers were fixed then);
                    // say so once instead of ignoring the change.
                    let mut seen = self.new_seen.lock().unwrap_or_else(|p| p.into_inner());
                    if seen.insert(id.clone()) {
                        self.bus.record(
KernelEvent::ExtensionReloadRefused {
                            id: id.to_string(),
                            reason: "it was not loaded when this session started (it is new, or it failed then); it is loaded when stud next starts".into(),
                        });
                    }
                    continue;
                };
                if self.scopes.get(&id).is_some_and(|s| *s != d.scope) {
                    let mut seen = self.new_seen.lock().unwrap_or_else(|p| p.into_inner());
                    if seen.insert(format!("{id}@{}", d.scope)) {
                        self.bus.record(
KernelEvent::ExtensionReloadRefused {
                            id: id.to_string(),
                            reason: format!("the `{id}` now found comes from the {} scope, not the one this session loaded; it is another extension with its own grants, loaded when stud next starts", d.scope),
                        });
                    }
                    continue;
                }
                // A folder without a lockfile entry was pinned by this
                // scan: its pin is the new version (`spec` refuses other
                // bytes, and the change that brought them rescans).
                let new = match (&d.expected_digest, d.session_pin) {
                    (Some(pinned), true) => pinned.clone(),
                    _ => {
                        let Ok(bytes) = d.read_bytes() else { continue };
                        Sha256Digest::of(&bytes)
                    }
                };
                let tried = failed
                    .get(&id)
                    .is_some_and(|f| f.digest == new && f.manifest == d.manifest);
                if new == current.digest || pending.get(&id) == Some(&new) || tried {
                    continue;
                }
                let review =
                    accepted.get_or_insert_with(|| Accepted::read(self.home.root(), &self.project));
                if let Err(not) = review.admits(d) {
                    let mut told = self.unreviewed.lock().unwrap_or_else(|p| p.into_inner());
                    if told.insert((id.clone(), new.clone())) {
                        self.bus.record(KernelEvent::ExtensionReloadRefused {
                            id: id.clone(),
                            reason: not.refusal(
                                &id,
                                "The version this session started with keeps running.",
                            ),
                        });
                    }
                    continue;
                }
                if current.manifest.reload == ReloadBehavior::Never {
                    self.bus.record(
KernelEvent::ExtensionReloadRefused {
                        id: id.to_string(),
                        reason: "its manifest says reload = \"never\"; restart stud to use the new version".into(),
                    });
                    continue;
                }
                let mut spec = match self.registry.spec(d, self.registry.config_of(d).cloned()) {
                    Ok(s) => s,
                    Err(e) => {
                        failures.push((id, new, d.manifest.clone(), e.to_string()));
                        continue;
                    }
                };
                // Replaced while it was read: the change events that
                // follow bring a rescan of the finished pair.
                if !d.manifest_unchanged() {
                    continue;
                }
                // What is compiled is what `spec` read, should the file
                // have changed again since.
                let new = Sha256Digest::of(&spec.bytes);
                self.bus.record(KernelEvent::ExtensionReloadRequested {
                    id: id.to_string(),
                    from: current.digest.to_string(),
                    to: new.to_string(),
                });
                spec.state = current.state();
                let runtime = self.registry.runtime.clone();
                // Compiled and linked now: a version that cannot be is refused
                // before it replaces the running one.
                let job = self.runtime.spawn_blocking(move || {
                    let ext = runtime.load(spec).map_err(|e| e.to_string())?;
                    ext.link_now().map(|_| ext)
                });
                pending.insert(id.clone(), new.clone());
                in_flight.push(Job {
                    id,
                    digest: new,
                    manifest: d.manifest.clone(),
                    handle: job,
                });
            }
        }
        for (id, digest, manifest, error) in failures {
            self.failed(&id, Failed { digest, manifest }, &error);
        }
    }

    /// Report a reload that failed; the same component and manifest are
    /// not tried again until `/reload`.
    fn failed(&self, id: &str, what: Failed, error: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.get(id) == Some(&what.digest) {
            pending.remove(id);
        }
        drop(pending);
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), what);
        self.bus.record(KernelEvent::ExtensionReloadFailed {
            id: id.to_string(),
            error: error.to_string(),
            kept: "the old version keeps running".into(),
        });
    }

    /// Finished reloads (waiting for compiles in progress), failures
    /// reported. Their order is the order of the changes.
    pub async fn finished(&self) -> Vec<Ready> {
        let jobs = std::mem::take(&mut *self.in_flight.lock().unwrap_or_else(|p| p.into_inner()));
        let mut ready = Vec::new();
        for Job {
            id,
            digest,
            manifest,
            handle,
        } in jobs
        {
            match handle.await {
                Ok(Ok(ext)) => {
                    let from = self
                        .loaded
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&id)
                        .map(|l| l.digest.clone())
                        .unwrap_or_else(|| ext.digest.clone());
                    ready.push(Ready {
                        ext: Arc::new(ext),
                        from,
                    })
                }
                Ok(Err(e)) => self.failed(&id, Failed { digest, manifest }, &e),
                Err(e) => self.failed(
                    &id,
                    Failed { digest, manifest },
                    &format!("the reload task failed: {e}"),
                ),
            }
        }
        ready
    }

    /// The version serving `id` now.
    pub fn current(&self, id: &str) -> Option<Arc<Extension>> {
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Record that `ext` now serves its id.
    pub fn swapped(&self, ext: &Arc<Extension>, from: &Sha256Digest, boundary: &str) {
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ext.id().to_string(), ext.clone());
        self.settle(ext);
        self.bus.record(KernelEvent::ExtensionReloaded {
            id: ext.id().to_string(),
            version: ext.manifest.version.to_string(),
            from: from.to_string(),
            to: ext.digest.to_string(),
            boundary: boundary.into(),
        });
    }

    /// A reload that compiled but cannot be swapped in.
    pub fn refuse(&self, ext: &Extension, reason: &str) {
        self.settle(ext);
        self.bus.record(KernelEvent::ExtensionReloadRefused {
            id: ext.id().to_string(),
            reason: reason.into(),
        });
    }

    /// `ext` is no longer on its way in (a newer change may be).
    pub fn settle(&self, ext: &Extension) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.get(ext.id().as_str()) == Some(&ext.digest) {
            pending.remove(ext.id().as_str());
        }
    }
}
