//! `[context]`: when a `kind = "context-provider"` extension is asked for
//! fragments. A provider that adds only what the person configured (a
//! file they named) declares the key with `when-config`; where that key
//! is empty the session never links or calls it. One that adds only what
//! it finds in the project root names those files in
//! `[context.when-project-has]` (`project_files.rs`).

use super::fields::Fields;
use super::kind::Kind;
use super::problems::Problems;
use super::project_files::{ProjectFiles, read_project_files};
use super::when_config::read_when_config;

const KNOWN: &[&str] = &["when-config", "when-project-has"];
const EXAMPLE: &str = "[context] with when-config = \"path\"";

/// A context provider's `[context]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContextDecl {
    /// `when-config`: a top-level key of the extension's config; the
    /// provider is asked for fragments only when the config gives that key
    /// something.
    pub when_config: Option<String>,
    /// `when-project-has`: the names it reads in the project root; where
    /// none of them exists it is not asked.
    #[serde(default)]
    pub when_project_has: Option<ProjectFiles>,
}

impl ContextDecl {
    /// Whether the provider takes part under `config`: always without
    /// `when-config`, else when the key holds anything but a plainly empty
    /// value (absent, `null`, `false`, `""`, `[]`, `{}`).
    pub fn provides_with(&self, config: &serde_json::Value) -> bool {
        super::when_config::admits(self.when_config.as_deref(), config)
    }
}

/// Reads `[context]`; only a context provider may have one.
pub(crate) fn read_context(
    top: &Fields<'_>,
    kind: Option<Kind>,
    config_schema: Option<&serde_json::Value>,
    p: &mut Problems,
) -> Option<ContextDecl> {
    let field = top.path("context");
    let table = top.table("context", EXAMPLE, p)?;
    if let Some(other) = kind.filter(|k| *k != Kind::ContextProvider) {
        p.push(
            &field,
            format!("only kind = \"context-provider\" extensions have a [context] table; remove it (this is a kind = \"{other}\" extension)"),
        );
        return None;
    }
    let fields = Fields::new(table, field);
    fields.unknown_keys(KNOWN, p);
    let when_config = fields
        .string("when-config", "when-config = \"path\"", p)
        .and_then(|key| {
            read_when_config(
                key,
                &fields.path("when-config"),
                "when-config",
                config_schema,
                p,
            )
        });
    let when_project_has = read_project_files(&fields, config_schema, p);
    Some(ContextDecl {
        when_config,
        when_project_has,
    })
}
