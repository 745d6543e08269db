//! Phase 6: the session made from its parts, then what it does first:
//! take its lock, say it started, take up a resumed session's history and
//! attach its state machine.

use tracing::Instrument as _;

use super::configure::{Configured, profile_of};
use super::discover::Found;
use super::load::Loaded;
use super::parts::Parts;
use super::subscribe::Subscribed;
use super::{LaunchError, LaunchOptions, Launched};
use crate::extensions::Scope;
use crate::kernel::named::{self, NamedBy};
use crate::kernel::persist::{self, Persistence};
use crate::kernel::session::Session;
use crate::kernel::session_lock::SessionLock;
use crate::manifest::Kind;

pub(super) async fn open(
    opts: LaunchOptions,
    configured: Configured,
    found: Found,
    mut loaded: Loaded,
    subscribed: Subscribed,
    parts: Parts,
    mut warnings: Vec<String>,
) -> Result<Launched, LaunchError> {
    let Parts {
        session: session_parts,
        commands,
        provider_pick,
        watch,
    } = parts;
    let started = Session::start(&loaded.exts, session_parts)
        .instrument(tracing::debug_span!("session_start"))
        .await;
    // The store started beside it; one that did not start stops the
    // launch before the session is locked, announced or written.
    let store = loaded.store(&mut warnings).await?;
    let (mut session, tool_warnings) = started?;
    warnings.extend(tool_warnings);
    // A replay leaves no session of its own behind.
    if let Some(store) = store.filter(|_| opts.replay.is_none()) {
        session.keep_in(Persistence {
            store,
            created_ms: persist::now_ms(),
            project_root: loaded.project_root.clone(),
            loaded: loaded.exts.clone(),
            title: String::new(),
            wrote: Default::default(),
            manifests: Default::default(),
            last_manifest: Default::default(),
        });
    }
    let Loaded {
        exts,
        uis,
        loggers,
        resumed,
        set,
        ..
    } = loaded;
    // Before anything is written to the session's log.
    let lock = SessionLock::acquire(opts.home.root(), &session.id)?;
    session.announce();
    commands.announce();
    session
        .bus
        .trace()
        .push(stud_protocol::replay_trace::TraceEntry::Options {
            max_cost_usd: session.config.max_cost_usd,
            max_iterations: session.config.max_iterations,
            tool_parallelism: session.config.tool_parallelism as u64,
        });
    let recorded = resumed.as_ref().map(|r| r.state_machine.clone());
    if let Some(r) = resumed {
        session.adopt(r).await;
    }
    let wanted = opts
        .state_machine
        .clone()
        .or(profile_of(&set).and_then(|p| p.state_machine.clone()))
        .or(configured.settings.active.state_machine.clone());
    // Settings or a profile naming the machine a resumed session ran add
    // nothing to its record, which decides (and is checked against what
    // is loaded); only `--sm` takes what is loaded now knowingly.
    let wanted = match (&wanted, &recorded) {
        (Some(w), Some(Some(r))) if opts.state_machine.is_none() && *w == r.id => None,
        _ => wanted,
    };
    // A state machine's stage envelopes approve tools: one your settings
    // or profile name must be yours, not a project's under the same id.
    if let Some(id) = &wanted
        && opts.state_machine.is_none()
    {
        named::check(
            &exts,
            Kind::StateMachine,
            id,
            NamedBy::Settings(Scope::Global),
            "active.stateMachine",
        )
        .map_err(|e| LaunchError::Setting(e.to_string()))?;
    }
    crate::kernel::workflow::attach::attach(&mut session, wanted.as_deref(), recorded).await?;
    session.save_manifest().await;
    Ok(Launched {
        session,
        commands,
        provider_pick,
        controls: subscribed.controls,
        bus: found.bus,
        services: found.services,
        uis,
        loggers,
        extensions: exts,
        warnings,
        subscribers: subscribed.subscribers,
        ui_subscriptions: subscribed.ui_subscriptions,
        watch,
        _lock: lock,
    })
}
