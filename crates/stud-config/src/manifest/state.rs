//! `[state]`: the extension's persistent state slot. Its version is stored
//! with the data, so a newer extension can tell old state apart and the
//! drift policy says what the host does when they differ.

use semver::Version;
use serde_json::Value as Json;

use super::fields::Fields;
use super::problems::Problems;
use super::schema::{SchemaCheck, check_compiles, to_json};
use super::versions::parse_version;
use stud_protocol::text_enum;

pub(crate) const KNOWN: &[&str] = &["version", "schema", "drift"];

text_enum! {
    /// What the host does when stored state has another version than the
    /// manifest declares.
    pub enum DriftPolicy("drift policy") {
        /// Hand the old state to the extension's migrate call.
        Migrate = "migrate",
        /// Load it anyway and warn.
        Warn = "warn",
        /// Refuse to load the state (the extension starts empty).
        Reject = "reject",
    }
}

/// A declared state slot.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StateSlot {
    pub version: Version,
    pub schema: Option<Json>,
    pub drift: DriftPolicy,
}

/// Reads `[state]`; `None` when absent or unusable.
pub(crate) fn read_state(
    fields: Option<Fields<'_>>,
    check: SchemaCheck,
    p: &mut Problems,
) -> Option<StateSlot> {
    let fields = fields?;
    let version = fields
        .required_string("version", "version = \"1.0.0\"", p)
        .and_then(|text| {
            parse_version(text, "version")
                .map_err(|message| p.push(fields.path("version"), message))
                .ok()
        });
    let example = "schema = { type = \"object\", properties = { count = { type = \"integer\" } } }";
    let schema = match fields.get("schema") {
        None => Some(None),
        Some(value) => fields.table("schema", example, p).and_then(|_| {
            let at = fields.path("schema");
            let json = to_json(value, &at, p)?;
            check_compiles(&json, &at, check, p).then_some(Some(json))
        }),
    };
    let drift = match fields.string("drift", "drift = \"warn\"", p) {
        None => fields
            .get("drift")
            .map_or(Some(DriftPolicy::Warn), |_| None),
        Some(text) => text
            .parse::<DriftPolicy>()
            .map_err(|e| p.push(fields.path("drift"), e.to_string()))
            .ok(),
    };
    fields.unknown_keys(KNOWN, p);
    Some(StateSlot {
        version: version?,
        schema: schema?,
        drift: drift?,
    })
}
