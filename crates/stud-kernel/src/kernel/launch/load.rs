//! Phase 3: the extensions loaded, the session store chosen, a resumed
//! session's record read, and the extension set applied to all three.

use std::sync::Arc;

use tracing::Instrument as _;

use super::configure::Configured;
use super::discover::Found;
use super::{LaunchError, LaunchOptions};
use crate::config::Settings;
use crate::extensions::registry::project_dir;
use crate::extensions::{Discovery, Scope};
use crate::kernel::extension_set::ExtensionSet;
use crate::kernel::named::{self, NamedBy};
use crate::kernel::persist::{self, ResumeError, Resumed};
use crate::manifest::{Kind, Manifest};
use crate::runtime::Extension;

/// The session's extensions, after its set chose among them.
pub(super) struct Loaded {
    pub exts: Vec<Arc<Extension>>,
    pub uis: Vec<Arc<Extension>>,
    pub loggers: Vec<Arc<Extension>>,
    pub store: Option<Arc<Extension>>,
    /// A resumed session's record.
    pub resumed: Option<Resumed>,
    /// The set in force: chosen now, else the resumed session's.
    pub set: Option<ExtensionSet>,
    pub project_root: String,
}

impl Loaded {
    /// Whether the set keeps an extension.
    pub fn keeps(&self, m: &Manifest, scope: Scope) -> bool {
        kept(self.set.as_ref(), m, scope)
    }
}

/// Whether `set` (none: everything) keeps an extension.
fn kept(set: Option<&ExtensionSet>, m: &Manifest, scope: Scope) -> bool {
    set.is_none_or(|s| s.keeps(m, scope))
}

pub(super) async fn load(
    opts: &LaunchOptions,
    configured: &Configured,
    found: &Found,
    warnings: &mut Vec<String>,
) -> Result<Loaded, LaunchError> {
    let discovery = &found.discovery;
    // Commands are instantiated at first use, not at start.
    let eager = Discovery {
        found: discovery
            .found
            .iter()
            .filter(|d| d.manifest.kind != Kind::Command)
            .cloned()
            .collect(),
        problems: Vec::new(),
    };
    let report = found
        .registry
        .load_all(&eager)
        .instrument(tracing::debug_span!(
            "load_extensions",
            count = eager.found.len()
        ))
        .await;
    warnings.extend(report.warnings.iter().cloned());
    warnings.extend(
        report
            .failed
            .iter()
            .map(|(_, e)| format!("{e}; continuing without it")),
    );
    let all = report.loaded;
    // The store is read before the set is known: a resumed session brings
    // the set it was started with.
    let project_root = project_dir(&opts.cwd).display().to_string();
    let failed: Vec<(String, String)> = report
        .failed
        .iter()
        .map(|(id, e)| (id.to_string(), e.to_string()))
        .collect();
    let stores: Vec<Arc<Extension>> = all
        .iter()
        .filter(|e| e.kind() == Kind::SessionStore)
        .cloned()
        .collect();
    // A profile's store over the settings' (`--profile`; a resumed
    // session's recorded set comes after its store is read).
    let by_profile = configured
        .chosen_set
        .as_ref()
        .and_then(|s| s.choice.session_store.clone());
    let named_by = match &by_profile {
        Some(_) => NamedBy::Settings(Scope::Global),
        None => NamedBy::setting(&configured.provenance, "/active/sessionStore"),
    };
    let wanted = by_profile.or_else(|| configured.settings.active.session_store.clone());
    let store = choose_store(
        &configured.settings,
        wanted.as_deref(),
        named_by,
        &stores,
        &failed,
        warnings,
    )?;
    // Started now (instances start at first use): a store that cannot
    // (its database out of reach) is said before the session begins.
    let store = match store {
        Some(s) => match s.start().await {
            Ok(()) => Some(s),
            Err(e) => {
                let fallback = fallback_for(
                    &configured.settings,
                    s.id().as_str(),
                    &e.to_string(),
                    &stores,
                    warnings,
                )?;
                fallback.start().await.map_err(|why| {
                    LaunchError::Setting(format!(
                        "the session store `{}` did not start ({e}), nor did its fallback `{}`: {why}",
                        s.id(),
                        fallback.id()
                    ))
                })?;
                Some(fallback)
            }
        },
        None => None,
    };
    let resumed = match (&opts.resume, &store) {
        (None, _) => None,
        (Some(_), None) => return Err(ResumeError::NoStore.into()),
        (Some(target), Some(store)) => Some(
            persist::read(store, target, &project_root, &all)
                .instrument(tracing::debug_span!("resume"))
                .await?,
        ),
    };
    // Claimed before anything else starts (an append of no records: a
    // store several machines share takes its lock). Read before the
    // claim, so from a shared store it is read again: another process
    // may have written it in between.
    if let (Some(r), Some(store)) = (&resumed, &store) {
        let failed = |source| ResumeError::Store {
            store: store.id().to_string(),
            source,
        };
        store
            .store_append(&r.session_id, &[])
            .await
            .map_err(failed)?;
        if r.shared {
            let now = store.store_read(&r.session_id).await.map_err(failed)?;
            if now.records.len() != r.records {
                return Err(ResumeError::ChangedMeanwhile {
                    id: r.session_id.clone(),
                }
                .into());
            }
        }
    }
    // Names on the command line must exist; a recorded set whose
    // extensions were removed since still resumes (drift never fails it).
    if let Some(s) = &configured.chosen_set {
        s.check(&discovery.found)?;
    }
    let set = configured
        .chosen_set
        .clone()
        .or_else(|| resumed.as_ref().and_then(|r| r.extension_set.clone()));
    let keeps = |m: &Manifest, scope: Scope| kept(set.as_ref(), m, scope);
    let exts: Vec<Arc<Extension>> = all
        .into_iter()
        .filter(|e| keeps(&e.manifest, e.scope))
        .collect();
    let store = store.filter(|s| keeps(&s.manifest, s.scope));
    let of = |k: Kind| {
        exts.iter()
            .filter(|e| e.kind() == k)
            .cloned()
            .collect::<Vec<_>>()
    };
    Ok(Loaded {
        uis: of(Kind::Ui),
        loggers: of(Kind::Logger),
        exts,
        store,
        resumed,
        set,
        project_root,
    })
}

/// The session store: `wanted` (a profile's `sessionStore`, else
/// `active.sessionStore`: global settings only, so never a project's
/// store), else the bundled `filesystem` store, else the
/// first bundled or global one loaded. A store writes the manifests resume
/// believes (the state machine a session ran, its project root), so a
/// project's store is never chosen by default, not even when the user's
/// own failed to load: then no store keeps the session.
///
/// The chosen store failing to start (a database out of reach) stops the
/// launch with its reason, unless `active.sessionStoreFallback` names a
/// store to keep sessions meanwhile (said in a warning).
fn choose_store(
    settings: &Settings,
    wanted: Option<&str>,
    named_by: NamedBy,
    stores: &[Arc<Extension>],
    failed: &[(String, String)],
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<Extension>>, LaunchError> {
    let Some(id) = wanted else {
        return Ok(stores
            .iter()
            .find(|s| s.scope <= Scope::Global && s.id().as_str() == persist::DEFAULT_STORE)
            .or_else(|| stores.iter().find(|s| s.scope <= Scope::Global))
            .cloned());
    };
    if let Some((_, why)) = failed.iter().find(|(f, _)| f == id) {
        return fallback_for(settings, id, why, stores, warnings).map(Some);
    }
    named::check(
        stores,
        Kind::SessionStore,
        id,
        named_by,
        "active.sessionStore",
    )
    .map_err(|e| LaunchError::Setting(e.to_string()))?;
    Ok(Some(
        stores
            .iter()
            .find(|s| s.id().as_str() == id)
            .cloned()
            .ok_or_else(|| {
                LaunchError::Setting(format!(
                    "settings.json: active.sessionStore: `{id}` is not a loaded session store (loaded: {})",
                    stores.iter().map(|s| s.id().to_string()).collect::<Vec<_>>().join(", ")
                ))
            })?,
    ))
}

/// The store `id` did not start (`why`): the launch stops with the reason,
/// unless `active.sessionStoreFallback` names a bundled or global store to
/// keep sessions meanwhile (said in a warning).
fn fallback_for(
    settings: &Settings,
    id: &str,
    why: &str,
    stores: &[Arc<Extension>],
    warnings: &mut Vec<String>,
) -> Result<Arc<Extension>, LaunchError> {
    let Some(fallback) = &settings.active.session_store_fallback else {
        return Err(LaunchError::Setting(format!(
            "the session store `{id}` did not start: {why}; mend it, or set `active.sessionStoreFallback` to \"{}\" in your global settings to keep sessions on this machine meanwhile",
            persist::DEFAULT_STORE
        )));
    };
    let chosen = stores
        .iter()
        .find(|s| s.scope <= Scope::Global && s.id().as_str() == fallback && fallback != id)
        .cloned()
        .ok_or_else(|| {
            LaunchError::Setting(format!(
                "the session store `{id}` did not start ({why}), and its fallback `{fallback}` (settings active.sessionStoreFallback) is not another loaded bundled or global session store"
            ))
        })?;
    warnings.push(format!(
        "the session store `{id}` did not start ({why}); this session is kept by `{fallback}` (settings active.sessionStoreFallback), and is resumed with it"
    ));
    Ok(chosen)
}
