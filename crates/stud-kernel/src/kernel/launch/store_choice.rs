//! Which session store keeps a session: the one a profile or
//! `active.sessionStore` names (the person's own, never a project's under
//! the id), else the bundled `filesystem` store; replaced by
//! `active.sessionStoreFallback` when the person named one, and a
//! database out of reach otherwise stops the launch before the session
//! opens or an MCP server starts. The session's launch ([`starting`]) and
//! `stud session …` ([`started`]) choose the same way.

use std::sync::Arc;

use tracing::Instrument as _;

use crate::config::Settings;
use crate::extensions::Scope;
use crate::kernel::named::{self, NamedBy};
use crate::kernel::persist;
use crate::manifest::Kind;
use crate::runtime::Extension;

use super::LaunchError;

/// A session store chosen and starting on a task of its own, so the
/// launch goes on while it links and starts (about 2 ms of a start's way
/// to its first request, docs/benchmarks.md). The launch
/// [settles](Self::settle) it before anything a failing store must come
/// before: before an MCP server is started, and before the session is
/// opened (locked, announced, its first manifest written). A store that
/// does not start still stops the launch, with the same error and
/// fallback as [`started`].
pub enum StoreStart {
    Settled(Option<Arc<Extension>>),
    Starting {
        id: String,
        task: tokio::task::JoinHandle<Result<Started, LaunchError>>,
    },
}

/// A started store and the warnings its fallback left.
pub struct Started {
    store: Arc<Extension>,
    warnings: Vec<String>,
}

impl StoreStart {
    /// The store, once started (its fallback's warning added to
    /// `warnings`); `None` when no store keeps the session. After an
    /// error the launch stops: nothing is left to settle.
    pub async fn settle(
        &mut self,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Arc<Extension>>, LaunchError> {
        let (id, task) = match std::mem::replace(self, StoreStart::Settled(None)) {
            StoreStart::Settled(store) => {
                *self = StoreStart::Settled(store.clone());
                return Ok(store);
            }
            StoreStart::Starting { id, task } => (id, task),
        };
        let started = task.await.map_err(|e| {
            LaunchError::Setting(format!(
                "the session store `{id}` did not start: its start was cut short ({e})"
            ))
        })??;
        warnings.extend(started.warnings);
        *self = StoreStart::Settled(Some(started.store.clone()));
        Ok(Some(started.store))
    }
}

/// The store chosen now (a wrong name stops the launch here) and started
/// on a task: see [`StoreStart`]. `chosen` runs once the choice is made,
/// before the store starts (the launch starts linking the rest there).
pub fn starting(
    settings: &Settings,
    wanted: Option<&str>,
    named_by: NamedBy,
    stores: &[Arc<Extension>],
    failed: &[(String, String)],
    warnings: &mut Vec<String>,
    chosen: impl FnOnce(),
) -> Result<StoreStart, LaunchError> {
    let choice = choose_store(settings, wanted, named_by, stores, failed, warnings)?;
    chosen();
    let Some(store) = choice else {
        return Ok(StoreStart::Settled(None));
    };
    let fallback = settings.active.session_store_fallback.clone();
    let stores = stores.to_vec();
    let id = store.id().to_string();
    let span = tracing::Span::current();
    let task = tokio::spawn(
        async move {
            let mut warnings = Vec::new();
            let store =
                start_or_fall_back(store, fallback.as_deref(), &stores, &mut warnings).await?;
            Ok(Started { store, warnings })
        }
        .instrument(span),
    );
    Ok(StoreStart::Starting { id, task })
}

/// The chosen store, started (or its fallback, with a warning); `None`
/// when no store of the person's is loaded. `failed` holds the stores
/// that did not load, by id, with why.
pub async fn started(
    settings: &Settings,
    wanted: Option<&str>,
    named_by: NamedBy,
    stores: &[Arc<Extension>],
    failed: &[(String, String)],
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<Extension>>, LaunchError> {
    starting(settings, wanted, named_by, stores, failed, warnings, || {})?
        .settle(warnings)
        .await
}

/// `store` started, else the fallback `active.sessionStoreFallback` names.
async fn start_or_fall_back(
    store: Arc<Extension>,
    fallback: Option<&str>,
    stores: &[Arc<Extension>],
    warnings: &mut Vec<String>,
) -> Result<Arc<Extension>, LaunchError> {
    // Instances start at first use: start it now.
    let Err(e) = store.start().await else {
        return Ok(store);
    };
    let fallback = fallback_for(
        fallback,
        store.id().as_str(),
        &e.to_string(),
        stores,
        warnings,
    )?;
    fallback.start().await.map_err(|why| {
        LaunchError::Setting(format!(
            "the session store `{}` did not start ({e}), nor did its fallback `{}`: {why}",
            store.id(),
            fallback.id()
        ))
    })?;
    Ok(fallback)
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
        return fallback_for(
            settings.active.session_store_fallback.as_deref(),
            id,
            why,
            stores,
            warnings,
        )
        .map(Some);
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
    fallback: Option<&str>,
    id: &str,
    why: &str,
    stores: &[Arc<Extension>],
    warnings: &mut Vec<String>,
) -> Result<Arc<Extension>, LaunchError> {
    let Some(fallback) = fallback else {
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
