//! Which session store keeps a session: the one a profile or
//! `active.sessionStore` names (the person's own, never a project's under
//! the id), else the bundled `filesystem` store; started at once, so a
//! database out of reach is said before anything else, and replaced by
//! `active.sessionStoreFallback` when the person named one. The session's
//! launch and `stud session …` choose through this one function.

use std::sync::Arc;

use crate::config::Settings;
use crate::extensions::Scope;
use crate::kernel::named::{self, NamedBy};
use crate::kernel::persist;
use crate::manifest::Kind;
use crate::runtime::Extension;

use super::LaunchError;

/// The chosen store, started (or its fallback, with a warning); `None`
/// when no store of the person's is loaded. `failed` holds the stores
/// that did not load, by id, with why. `chosen` runs once the choice is
/// made, before the store starts (the launch starts linking the rest
/// there, while this thread links and starts the store).
pub async fn started(
    settings: &Settings,
    wanted: Option<&str>,
    named_by: NamedBy,
    stores: &[Arc<Extension>],
    failed: &[(String, String)],
    warnings: &mut Vec<String>,
    chosen: impl FnOnce(),
) -> Result<Option<Arc<Extension>>, LaunchError> {
    let choice = choose_store(settings, wanted, named_by, stores, failed, warnings)?;
    chosen();
    let Some(store) = choice else {
        return Ok(None);
    };
    // Instances start at first use: start it now.
    let Err(e) = store.start().await else {
        return Ok(Some(store));
    };
    let fallback = fallback_for(
        settings,
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
    Ok(Some(fallback))
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
