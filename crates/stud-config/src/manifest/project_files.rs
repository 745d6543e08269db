//! `[context.when-project-has]`: a context provider that adds only what
//! it finds under given names in the project root (`AGENTS.md`) says so,
//! and a session where none of those names exist neither links nor calls
//! it (issue 42). The check runs before every request, so a file created
//! mid-session is taken up at the next one.

use super::fields::{Fields, as_str};
use super::problems::Problems;
use super::when_config::read_when_config;

const KNOWN: &[&str] = &["files", "config"];
const EXAMPLE: &str = "[context.when-project-has] with files = [\"AGENTS.md\"]";

/// The names a context provider looks for in the project root.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProjectFiles {
    /// The names it reads when its config names none.
    pub files: Vec<String>,
    /// A top-level config key whose list of names replaces `files`.
    pub config: Option<String>,
}

/// What the provider reads, as far as the kernel can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// These names in the project root, and nothing else.
    Names(Vec<String>),
    /// Something the declaration does not describe (a config value that
    /// is not a list of plain names): the provider always takes part.
    Unknown,
}

impl ProjectFiles {
    /// The names the provider reads under `config`: its config key's list
    /// when the config gives one, else the manifest's.
    pub fn reads_with(&self, config: &serde_json::Value) -> Reads {
        let given = self
            .config
            .as_deref()
            .and_then(|key| config.get(key))
            .filter(|v| !v.is_null());
        let Some(given) = given else {
            return Reads::Names(self.files.clone());
        };
        let names: Option<Vec<String>> = given.as_array().and_then(|items| {
            items
                .iter()
                .map(|i| i.as_str().filter(|n| plain_name(n)).map(str::to_string))
                .collect()
        });
        names.map_or(Reads::Unknown, Reads::Names)
    }
}

/// One path component that names an entry of the folder itself.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Reads `when-project-has` of `[context]` (at `fields`).
pub(crate) fn read_project_files(
    fields: &Fields<'_>,
    config_schema: Option<&serde_json::Value>,
    p: &mut Problems,
) -> Option<ProjectFiles> {
    let table = fields.table("when-project-has", EXAMPLE, p)?;
    let inner = Fields::new(table, fields.path("when-project-has"));
    inner.unknown_keys(KNOWN, p);
    let files = read_files(&inner, p);
    // `None`: no key; `Some(None)`: a key the schema does not declare.
    let config = inner.string("config", "config = \"files\"", p).map(|key| {
        read_when_config(
            key,
            &inner.path("config"),
            "`config` from [context.when-project-has]",
            config_schema,
            p,
        )
    });
    let files = files?;
    let config = match config {
        Some(key) => Some(key?),
        None => None,
    };
    Some(ProjectFiles { files, config })
}

/// `files`: a non-empty list of plain names; every problem is reported.
fn read_files(inner: &Fields<'_>, p: &mut Problems) -> Option<Vec<String>> {
    let at = inner.path("files");
    if inner.get("files").is_none() {
        p.push(
            &at,
            format!("is missing: the names the provider looks for in the project root; write e.g. {EXAMPLE}"),
        );
        return None;
    }
    let items = inner.array("files", "files = [\"AGENTS.md\"]", p)?;
    if items.is_empty() {
        p.push(
            &at,
            "is empty, so the provider would never take part; name the files it reads, or remove the table".to_string(),
        );
        return None;
    }
    let mut files = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let item_at = format!("{at}[{i}]");
        match as_str(item, &item_at, "files = [\"AGENTS.md\"]", p) {
            Some(name) if plain_name(name) => files.push(name.to_string()),
            Some(name) => {
                p.push(
                    &item_at,
                    format!("`{name}` is not a plain file name; name an entry of the project root itself (no `/`, `\\`, `.`, `..` or empty name)"),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl() -> ProjectFiles {
        ProjectFiles {
            files: vec!["AGENTS.md".into(), "STUD.md".into()],
            config: Some("files".into()),
        }
    }

    #[test]
    fn the_config_list_replaces_the_manifests_names() {
        let names = |v: Vec<&str>| Reads::Names(v.into_iter().map(String::from).collect());
        assert_eq!(
            decl().reads_with(&json!({})),
            names(vec!["AGENTS.md", "STUD.md"])
        );
        assert_eq!(
            decl().reads_with(&json!({"files": null})),
            names(vec!["AGENTS.md", "STUD.md"])
        );
        assert_eq!(
            decl().reads_with(&json!({"files": ["RULES.md"]})),
            names(vec!["RULES.md"])
        );
        assert_eq!(decl().reads_with(&json!({"files": []})), names(vec![]));
    }

    #[test]
    fn what_the_declaration_does_not_describe_is_unknown() {
        for config in [
            json!({"files": "AGENTS.md"}),
            json!({"files": [1]}),
            json!({"files": ["../AGENTS.md"]}),
            json!({"files": ["docs/AGENTS.md"]}),
            json!({"files": [".."]}),
            json!({"files": [""]}),
        ] {
            assert_eq!(decl().reads_with(&config), Reads::Unknown, "{config}");
        }
    }
}
