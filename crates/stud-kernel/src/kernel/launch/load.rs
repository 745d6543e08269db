//! Phase 3: the extensions loaded, the session store chosen (and its
//! start begun), a resumed session's record read, and the extension set
//! applied to all three.

use std::sync::Arc;

use tracing::Instrument as _;

use super::configure::Configured;
use super::configure::profile_of;
use super::discover::Found;
use super::prelink::prelink_start;
use super::session_config::pick_provider;
use super::store_choice::StoreStart;
use super::{LaunchError, LaunchOptions, store_choice};
use crate::extensions::Scope;
use crate::extensions::registry::project_dir;
use crate::kernel::extension_set::ExtensionSet;
use crate::kernel::named::NamedBy;
use crate::kernel::persist::{self, ResumeError, Resumed};
use crate::manifest::{Kind, Manifest};
use crate::runtime::Extension;

/// The session's extensions, after its set chose among them.
pub(super) struct Loaded {
    pub exts: Vec<Arc<Extension>>,
    pub uis: Vec<Arc<Extension>>,
    pub loggers: Vec<Arc<Extension>>,
    /// Starting beside the rest of the launch (settled at once when a
    /// session is resumed: its record is read through it).
    store: StoreStart,
    /// A resumed session's record.
    pub resumed: Option<Resumed>,
    /// The set in force: chosen now, else the resumed session's.
    pub set: Option<ExtensionSet>,
    pub project_root: String,
    /// The extensions that did not load, with why (id, message).
    pub failed: Vec<(String, String)>,
}

impl Loaded {
    /// The session store, once started; `None` when no store keeps the
    /// session (none loaded, or the set leaves it out). A store that did
    /// not start (nor its fallback) stops the launch here.
    pub async fn store(
        &mut self,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Arc<Extension>>, LaunchError> {
        let store = self.store.settle(warnings).await?;
        Ok(store.filter(|s| self.keeps(&s.manifest, s.scope)))
    }

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
    let eager: Vec<_> = discovery
        .found
        .iter()
        .filter(|d| d.manifest.kind != Kind::Command)
        .cloned()
        .collect();
    let count = eager.len();
    let report = found
        .registry
        .load_all(eager)
        .instrument(tracing::debug_span!("load_extensions", count))
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
    // Link ahead while the store starts (on this thread); the provider is
    // the one named before a resumed session's record is read.
    let (provider, _) = pick_provider(
        opts,
        &configured.settings,
        profile_of(&configured.chosen_set),
        &all,
    );
    let mut store = store_choice::starting(
        &configured.settings,
        wanted.as_deref(),
        named_by,
        &stores,
        &failed,
        warnings,
        || prelink_start(&all, &provider),
    )?;
    if opts.resume.is_some() {
        store.settle(warnings).await?;
    }
    let settled = match &store {
        StoreStart::Settled(s) => s.clone(),
        StoreStart::Starting { .. } => None,
    };
    let resumed = match (&opts.resume, &settled) {
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
    if let (Some(r), Some(store)) = (&resumed, &settled) {
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
        failed,
    })
}
