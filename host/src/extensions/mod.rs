//! Finding extensions (bundled, global; project once trust exists) and
//! loading them into the runtime.

pub mod discovery;
pub mod grants;
pub mod registry;
pub mod scope;

pub use discovery::{Discovered, Discovery, DiscoveryProblem};
pub use grants::UserGrants;
pub use registry::{LoadReport, Registry};
pub use scope::Scope;
