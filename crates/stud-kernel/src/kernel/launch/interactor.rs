//! Which UI answers questions, and the interactions it answers through.

use std::sync::Arc;

use super::{DEFAULT_INTERACTOR, LaunchOptions, SCREEN_INTERACTOR};
use crate::config::Settings;
use crate::kernel::events::Bus;
use crate::kernel::interaction::{DEFAULT_TIMEOUT, Interactions};
use crate::kernel::named::may_answer;
use crate::runtime::Extension;

/// Only the interactor the user chose answers; every other UI observes.
/// The UI that answers questions: the set's, else `active.interactor`,
/// else the full-screen `tui` on a terminal, else `console`.
pub(super) fn interactor_id(
    opts: &LaunchOptions,
    settings: &Settings,
    chosen_ui: Option<&str>,
    uis: &[Arc<Extension>],
) -> String {
    chosen_ui
        .map(str::to_string)
        .or(settings.active.interactor.clone())
        .or_else(|| {
            opts.screen.as_ref().and_then(|_| {
                uis.iter()
                    .find(|u| {
                        u.id().as_str() == SCREEN_INTERACTOR && may_answer(u) && u.ui_has_screen()
                    })
                    .map(|u| u.id().to_string())
            })
        })
        .unwrap_or_else(|| DEFAULT_INTERACTOR.to_string())
}

pub(super) fn interactions(
    opts: &LaunchOptions,
    settings: &Settings,
    interactor_id: &str,
    uis: &[Arc<Extension>],
    bus: &Bus,
    warnings: &mut Vec<String>,
) -> Arc<Interactions> {
    let named = uis.iter().find(|u| u.id().as_str() == interactor_id);
    let chosen = named.filter(|u| may_answer(u));
    match named {
        _ if opts.headless => {}
        Some(project) if chosen.is_none() => warnings.push(format!(
            "active.interactor: `{interactor_id}` is a {} extension here (a trusted project brought its own `{interactor_id}`); a project extension never answers questions, since answering is approving. Nobody can answer, so a call that needs an approval halts the turn",
            project.scope
        )),
        None => warnings.push(format!(
            "settings.json: active.interactor: `{interactor_id}` is not a loaded UI extension (loaded: {}); nobody can answer questions, so a call that needs an approval halts the turn",
            uis.iter().map(|u| u.id().to_string()).collect::<Vec<_>>().join(", ")
        )),
        Some(_) => {}
    }
    let interactor = chosen.filter(|_| !opts.headless).cloned();
    Arc::new(Interactions::new(
        interactor,
        opts.headless,
        opts.yolo,
        settings
            .runtime
            .interaction_timeout_ms
            .map(std::time::Duration::from_millis)
            .unwrap_or(DEFAULT_TIMEOUT),
        bus.clone(),
    ))
}
