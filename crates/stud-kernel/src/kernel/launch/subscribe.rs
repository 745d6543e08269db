//! Phase 4: the UIs and loggers subscribed to the bus, and the UI that
//! answers questions chosen and connected. Before the parts: a question
//! asked while MCP servers start goes through the full-screen UI's driver,
//! and nothing published from here on is missed.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::configure::Configured;
use super::discover::Found;
use super::interactor::{interactions, interactor_id};
use super::load::Loaded;
use super::{DEFAULT_INTERACTOR, LaunchOptions};
use crate::kernel::events::{DEFAULT_QUEUE, Subscriber};
use crate::kernel::first_request::FirstRequest;
use crate::kernel::input_history::InputHistory;
use crate::kernel::interaction::Interactions;
use crate::kernel::named::may_answer;
use crate::kernel::notifier;
use crate::kernel::screen_ui::{Control, Driver};
use crate::kernel::subscribers::{spawn_logger, spawn_ui};
use crate::tty::Screen;

/// The running subscribers and where questions go.
pub(super) struct Subscribed {
    pub subscribers: Vec<JoinHandle<()>>,
    pub ui_subscriptions: Vec<Arc<Subscriber>>,
    /// What the person does through a full-screen UI.
    pub controls: Option<mpsc::UnboundedReceiver<Control>>,
    /// The questions of the session, connected to the host's services.
    pub interactions: Arc<Interactions>,
    /// Opened once the first provider request is out.
    pub first_request: FirstRequest,
}

pub(super) fn subscribe(
    opts: &LaunchOptions,
    configured: &Configured,
    found: &Found,
    loaded: &Loaded,
    warnings: &mut Vec<String>,
) -> Subscribed {
    let (bus, uis) = (&found.bus, &loaded.uis);
    let chosen_ui = loaded.set.as_ref().and_then(|s| s.choice.ui.as_deref());
    let interactor_id = interactor_id(opts, &configured.settings, chosen_ui, uis);
    let mut subscribers = Vec::new();
    let mut ui_subscriptions = Vec::new();
    let mut controls = None;
    let mut driver = None;
    let mut asks = opts.questions.clone();
    let screen_ui = uis
        .iter()
        .find(|u| u.id().as_str() == interactor_id && may_answer(u) && u.ui_has_screen())
        .cloned();
    let screen = match (&opts.screen, screen_ui, opts.render) {
        (Some(slot), Some(ui), true) => match Screen::in_slot(slot) {
            Ok(screen) => Some((screen, ui)),
            Err(e) => {
                warnings.push(format!(
                    "the terminal could not be set up for the full-screen UI ({e}); using the line console"
                ));
                None
            }
        },
        _ => None,
    };
    match screen {
        Some((screen, ui)) => {
            found.services.set_screen(screen.clone());
            let history = InputHistory::for_project(opts.home.root(), &opts.cwd);
            found
                .services
                .set_project(opts.cwd.clone(), history.clone());
            let (control_tx, control_rx) = mpsc::unbounded_channel();
            let (ask_tx, ask_rx) = mpsc::unbounded_channel();
            let sub = bus.subscribe(ui.id().as_str(), DEFAULT_QUEUE);
            ui_subscriptions.push(sub.clone());
            driver = Some(Driver {
                sub,
                ui,
                screen,
                controls: control_tx,
                asks: ask_rx,
                bus: bus.clone(),
                history,
            });
            controls = Some(control_rx);
            asks = Some(ask_tx);
        }
        None if opts.render => {
            // Line UIs only: a full-screen one has no screen to draw on.
            for ui in uis.iter().filter(|u| !u.ui_has_screen()) {
                let sub = bus.subscribe(ui.id().as_str(), DEFAULT_QUEUE);
                ui_subscriptions.push(sub.clone());
                subscribers.push(spawn_ui(sub, bus, ui.clone()));
            }
        }
        None => {}
    }
    let interactor_id = if asks.is_none()
        && uis
            .iter()
            .any(|u| u.id().as_str() == interactor_id && may_answer(u) && u.ui_has_screen())
    {
        // The full-screen UI has no screen here: the line console answers.
        DEFAULT_INTERACTOR.to_string()
    } else {
        interactor_id
    };
    let interactions = interactions(
        opts,
        &configured.settings,
        &interactor_id,
        uis,
        bus,
        warnings,
    );
    if let Some(asks) = asks.clone() {
        interactions.route_through(asks);
    }
    interactions.hold_output_with(found.services.held.clone());
    found.services.set_interactions(interactions.clone());
    // Started only now: what the UI draws at its start is the
    // interactor's (the host drops an unconnected UI's frames, and the UI
    // would then believe on screen what is not).
    if let Some(driver) = driver {
        subscribers.push(driver.spawn());
    }
    // A headless run knows its input: what its first request does not
    // need waits until that request is out (an interactive session links
    // it all while the person types).
    let first_request = if opts.headless {
        FirstRequest::closed()
    } else {
        FirstRequest::open_now()
    };
    for logger in &loaded.loggers {
        subscribers.push(spawn_logger(bus, logger.clone(), first_request.clone()));
    }
    if !opts.headless {
        let settings = &configured.settings.notifications;
        subscribers.extend(notifier::spawn(bus, found.services.clone(), settings));
    }
    Subscribed {
        subscribers,
        ui_subscriptions,
        controls,
        interactions,
        first_request,
    }
}
