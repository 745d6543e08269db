//! Linkers, one per (kind, linked capability set), built once and shared.
//! WASI p2 is always linked (its context has no env, no sockets and only
//! the granted preopens); `stud:extension` interfaces are linked per
//! [`HostInterface::gate`].

use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use super::caps::{Gate, HostInterface};
use super::contract::v0_1::stud::extension as b;
use super::host_state::HostState;
use crate::manifest::{Capabilities, Kind};

/// The interfaces that have something to link.
const LINKABLE: [HostInterface; 14] = [
    HostInterface::Log,
    HostInterface::Events,
    HostInterface::State,
    HostInterface::Config,
    HostInterface::Clock,
    HostInterface::Cancel,
    HostInterface::Interaction,
    HostInterface::Terminal,
    HostInterface::Secrets,
    HostInterface::Http,
    HostInterface::Process,
    HostInterface::Session,
    HostInterface::Files,
    HostInterface::Socket,
];

/// Which interfaces get linked for this kind and these capabilities; two
/// extensions with the same key share a linker.
pub fn link_key(kind: Kind, caps: &Capabilities) -> (Kind, Vec<HostInterface>) {
    let linked = LINKABLE
        .iter()
        .copied()
        .filter(|i| i.gate(kind, caps) == Gate::Always)
        .collect();
    (kind, linked)
}

/// What every linker has: WASI p2 and the file policy. Most of a linker's
/// cost (some 150 WASI functions named and typed); a runtime builds it
/// once and clones it for each key (issue 42).
pub fn base(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    super::caps::fs_policy::add_to_linker(&mut linker)?;
    Ok(linker)
}

/// `base` with `interfaces` linked as well.
pub fn extend(
    mut linker: Linker<HostState>,
    interfaces: &[HostInterface],
) -> wasmtime::Result<Linker<HostState>> {
    for iface in interfaces {
        link(&mut linker, *iface)?;
    }
    Ok(linker)
}

fn get(s: &mut HostState) -> &mut HostState {
    s
}

fn link(linker: &mut Linker<HostState>, iface: HostInterface) -> wasmtime::Result<()> {
    type D = HasSelf<HostState>;
    match iface {
        HostInterface::Log => b::log::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Events => b::events::add_to_linker::<HostState, D>(linker, get),
        HostInterface::State => b::state::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Config => b::config::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Clock => b::clock::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Cancel => b::cancel::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Interaction => b::interaction::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Terminal => b::terminal::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Secrets => b::secrets::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Process => b::process::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Http => b::http::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Session => b::session::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Files => b::files::add_to_linker::<HostState, D>(linker, get),
        HostInterface::Socket => b::socket::add_to_linker::<HostState, D>(linker, get),
        // Types-only interfaces have no functions.
        HostInterface::Types | HostInterface::KindTypes => Ok(()),
    }
}
