//! Finding extensions (bundled, global; project once trust exists) and
//! loading them into the runtime.

pub mod accepted;
pub mod cargo_build;
pub mod consent;
pub mod deps;
pub mod dev;
pub mod discovery;
pub mod grants;
pub mod index;
pub mod install;
pub mod lockfile;
pub mod pack;
pub mod registry;
pub mod review;
pub mod scaffold;
pub use crate::scope;
pub mod signing;
pub mod trust;
pub mod watch;

pub use discovery::{Discovered, Discovery, DiscoveryProblem, ProjectScope};
pub use grants::UserGrants;
pub use registry::{LoadReport, Registry};
pub use scope::Scope;
