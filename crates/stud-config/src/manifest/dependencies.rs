//! `[dependencies]`: other extensions this one needs, by id and version
//! range, so an installer can check them before anything runs.

use semver::VersionReq;

use super::fields::{Fields, as_str};
use super::id::ExtensionId;
use super::problems::Problems;
use super::versions::parse_requirement;

/// One `other-id = "range"` line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Dependency {
    pub id: ExtensionId,
    pub version: VersionReq,
}

/// Reads `[dependencies]`, sorted by id (TOML tables are unordered).
pub(crate) fn read_dependencies(
    fields: Option<Fields<'_>>,
    own: Option<&ExtensionId>,
    p: &mut Problems,
) -> Vec<Dependency> {
    let Some(fields) = fields else {
        return Vec::new();
    };
    let mut keys: Vec<&String> = fields.table.keys().collect();
    keys.sort_unstable();
    let mut out = Vec::new();
    for key in keys {
        let at = fields.path(key);
        let id = match key.parse::<ExtensionId>() {
            Ok(id) if Some(&id) == own => {
                p.push(
                    &at,
                    "an extension cannot depend on itself; remove this line",
                );
                None
            }
            Ok(id) => Some(id),
            Err(e) => {
                let example = ExtensionId::suggest(key)
                    .map_or_else(|| "other-extension".to_string(), String::from);
                p.push(
                    &at,
                    format!(
                        "{e}; write the other extension's id as the key, e.g. {example} = \"^0.1\""
                    ),
                );
                None
            }
        };
        let shown = id.as_ref().map_or("other-extension", ExtensionId::as_str);
        let example = format!("{shown} = \"^0.1\"");
        let version = fields
            .get(key)
            .and_then(|value| as_str(value, &at, &example, p))
            .and_then(|text| {
                parse_requirement(text, shown, "^0.1")
                    .map_err(|message| p.push(&at, message))
                    .ok()
            });
        if let (Some(id), Some(version)) = (id, version) {
            out.push(Dependency { id, version });
        }
    }
    out
}
