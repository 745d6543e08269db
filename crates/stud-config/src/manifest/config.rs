//! `[config]`: the schema of the settings a person may give the
//! extension. The host validates settings against it before loading, so
//! the extension can trust its config.

use serde_json::Value as Json;
use toml::{Table, Value};

use super::fields::Fields;
use super::problems::{Problems, shorten};
use super::schema::{SchemaCheck, check_compiles, to_json};

pub(crate) const KNOWN: &[&str] = &["schema"];
const EXAMPLE: &str = "schema = { type = \"object\", additionalProperties = false, properties = { model = { type = \"string\" } } }";

/// Reads `[config]` into the JSON Schema it declares.
pub(crate) fn read_config(
    fields: Option<Fields<'_>>,
    check: SchemaCheck,
    p: &mut Problems,
) -> Option<Json> {
    let fields = fields?;
    let schema = read_schema(&fields, check, p);
    fields.unknown_keys(KNOWN, p);
    schema
}

fn read_schema(fields: &Fields<'_>, check: SchemaCheck, p: &mut Problems) -> Option<Json> {
    let value = fields.require("schema", EXAMPLE, p)?;
    let table = fields.table("schema", EXAMPLE, p)?;
    let at = fields.path("schema");
    let shape_ok = check_shape(table, &at, p);
    let schema = to_json(value, &at, p)?;
    let compiles = check_compiles(&schema, &at, check, p);
    (shape_ok && compiles).then_some(schema)
}

/// Spec rule: config is always a table, and unknown settings are errors
/// (a misspelled key must not be silently ignored). Checked on the TOML
/// so it is reported even when the JSON conversion fails.
fn check_shape(schema: &Table, at: &str, p: &mut Problems) -> bool {
    let mut ok = true;
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            p.push(
                format!("{at}.type"),
                format!(
                    "is {}, but config is always a table; write type = \"object\"",
                    shown(other)
                ),
            );
            ok = false;
        }
        None => {
            p.push(
                format!("{at}.type"),
                "required but missing: config is always a table; write type = \"object\"",
            );
            ok = false;
        }
    }
    let why = "so that misspelled settings are reported instead of ignored; write additionalProperties = false";
    match schema.get("additionalProperties") {
        Some(Value::Boolean(false)) => {}
        Some(other) => {
            p.push(
                format!("{at}.additionalProperties"),
                format!("is {} but must be false {why}", shown(other)),
            );
            ok = false;
        }
        None => {
            p.push(
                format!("{at}.additionalProperties"),
                format!("required but missing: it must be false {why}"),
            );
            ok = false;
        }
    }
    ok
}

/// A TOML value as it would be written, shortened.
fn shown(value: &Value) -> String {
    shorten(&value.to_string(), 60)
}
