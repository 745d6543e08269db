//! Which extension a name in the settings means. The kernel resolves a
//! name by (scope, id), not by id alone: a project may bring an extension
//! under the id of one of the user's global extensions (its trust review
//! says it "replaces" it), and a name the user wrote must not silently
//! come to mean the repository's code.
//!
//! - A name from the user's global settings (a global value, a global-only
//!   key, a profile) means a bundled or global extension.
//! - A name from the project's settings may mean any.
//! - A name typed for this run (`--provider`, `--sm`) means what is loaded
//!   under it.
//! - The interactor is stricter: whoever names it, a project extension
//!   never answers questions, because answering is approving.
//!
//! Bundled ids are reserved (`discovery::not_reserved`), so a default the
//! kernel picks (`console`, `filesystem`) is always the bundled code.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::extensions::Scope;
use crate::manifest::Kind;
use crate::runtime::Extension;

/// Where a name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    /// Typed for this run.
    CommandLine,
    /// A settings file of this scope (a profile is global).
    Settings(Scope),
    /// The kernel's own choice when nothing names one.
    Default,
}

impl NamedBy {
    /// Whether an extension found in `scope` may be what the name means.
    pub fn admits(self, scope: Scope) -> bool {
        match self {
            NamedBy::CommandLine | NamedBy::Default => true,
            NamedBy::Settings(from) => scope <= from,
        }
    }

    /// The settings file that set `pointer` (`/active/provider`), from
    /// the merged settings' provenance (`config::Layered::provenance`).
    pub fn setting(provenance: &BTreeMap<String, String>, pointer: &str) -> Self {
        match provenance.get(pointer) {
            Some(source) if source.starts_with("project ") => NamedBy::Settings(Scope::Project),
            _ => NamedBy::Settings(Scope::Global),
        }
    }
}

/// Whether `ui` may answer questions: bundled or global only.
pub fn may_answer(ui: &Extension) -> bool {
    ui.scope <= Scope::Global
}

/// A name that came to mean an extension it may not mean.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{setting}: `{id}` names one of your own {kind} extensions, but the `{id}` loaded is a {scope} extension (a trusted project replaces your global `{id}` with its own); a name in your global settings never means a project extension. Rename one of the two, or choose it for this run on the command line"
)]
pub struct NotYours {
    pub setting: String,
    pub id: String,
    pub kind: Kind,
    pub scope: Scope,
}

/// Check that the `kind` extension loaded as `id` is one `by` may name
/// (`setting` says which setting named it). An id nothing loaded is left
/// to the caller's own "not loaded" error.
pub fn check(
    exts: &[Arc<Extension>],
    kind: Kind,
    id: &str,
    by: NamedBy,
    setting: &str,
) -> Result<(), NotYours> {
    match exts
        .iter()
        .find(|e| e.kind() == kind && e.id().as_str() == id)
    {
        Some(ext) if !by.admits(ext.scope) => Err(NotYours {
            setting: setting.to_string(),
            id: id.to_string(),
            kind,
            scope: ext.scope,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_global_name_admits_only_the_users_scopes() {
        let global = NamedBy::Settings(Scope::Global);
        assert!(global.admits(Scope::Bundled) && global.admits(Scope::Global));
        assert!(!global.admits(Scope::Project));
        assert!(NamedBy::Settings(Scope::Project).admits(Scope::Project));
        assert!(NamedBy::CommandLine.admits(Scope::Project));
        let mut provenance = BTreeMap::new();
        provenance.insert(
            "/active/provider".to_string(),
            "project /p/.stud/settings.json".to_string(),
        );
        provenance.insert(
            "/active/model".to_string(),
            "global /h/settings.json".to_string(),
        );
        assert_eq!(
            NamedBy::setting(&provenance, "/active/provider"),
            NamedBy::Settings(Scope::Project)
        );
        assert_eq!(
            NamedBy::setting(&provenance, "/active/model"),
            NamedBy::Settings(Scope::Global)
        );
    }
}
