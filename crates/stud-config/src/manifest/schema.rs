//! Inline JSON Schemas (`[config] schema`, `[state] schema`). They are
//! written as TOML, converted to JSON, and compiled once here so a broken
//! schema is an install-time problem with a field path, not a load-time
//! surprise.

use serde_json::{Map, Number, Value as Json};
use toml::Value;

use super::problems::{Problems, join, shorten};

/// Deeper than any sensible schema; the TOML parser already stops far
/// below this, this only keeps the conversion safe on its own.
const MAX_DEPTH: usize = 128;

/// Converts TOML to JSON, reporting values JSON cannot hold (date-times,
/// NaN and infinities) at their own path.
pub(crate) fn to_json(value: &Value, field: &str, p: &mut Problems) -> Option<Json> {
    convert(value, field, 0, p)
}

fn convert(value: &Value, field: &str, depth: usize, p: &mut Problems) -> Option<Json> {
    if depth > MAX_DEPTH {
        p.push(
            field,
            format!("nested deeper than {MAX_DEPTH} levels; flatten the schema"),
        );
        return None;
    }
    Some(match value {
        Value::String(s) => Json::String(s.clone()),
        Value::Integer(i) => Json::Number(Number::from(*i)),
        Value::Boolean(b) => Json::Bool(*b),
        Value::Float(f) => match Number::from_f64(*f) {
            Some(n) => Json::Number(n),
            None => {
                p.push(
                    field,
                    format!("{f} has no JSON equivalent; write a finite number"),
                );
                return None;
            }
        },
        Value::Datetime(d) => {
            p.push(
                field,
                format!("date-times have no JSON equivalent; quote it as a string, e.g. \"{d}\""),
            );
            return None;
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            let mut ok = true;
            for (i, item) in items.iter().enumerate() {
                match convert(item, &format!("{field}[{i}]"), depth + 1, p) {
                    Some(v) => out.push(v),
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            Json::Array(out)
        }
        Value::Table(table) => {
            let mut out = Map::new();
            let mut ok = true;
            for (key, item) in table {
                match convert(item, &join(field, key), depth + 1, p) {
                    Some(v) => {
                        out.insert(key.clone(), v);
                    }
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            Json::Object(out)
        }
    })
}

/// Whether reading a manifest compiles its schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaCheck {
    /// Compile them now (a broken one is a manifest problem): every
    /// manifest read from disk.
    Compile,
    /// Leave it to the first use: the manifests built into the binary,
    /// which the golden-manifest test compiles in full.
    Defer,
}

/// Compiles `schema` (validating it against its meta-schema) and reports
/// the first error at the schema location it points to.
pub(crate) fn check_compiles(
    schema: &Json,
    field: &str,
    check: SchemaCheck,
    p: &mut Problems,
) -> bool {
    if check == SchemaCheck::Defer {
        return true;
    }
    match super::compiled_schema::validator(schema) {
        Ok(_) => true,
        Err(e) => {
            let at = pointer_to_path(schema, &e.instance_path().to_string(), field);
            let fix = if at.ends_with(".type") {
                "write one of: array, boolean, integer, null, number, object, string"
            } else {
                "fix it (draft 2020-12 unless `$schema` names another draft)"
            };
            p.push(
                at,
                format!(
                    "is not a valid JSON Schema: {}; {fix}",
                    shorten(&e.to_string(), 200)
                ),
            );
            false
        }
    }
}

/// A JSON pointer into `schema` as a dotted manifest path under `field`,
/// using `[i]` where the pointer steps into an array.
fn pointer_to_path(schema: &Json, pointer: &str, field: &str) -> String {
    let mut path = field.to_string();
    let mut here = Some(schema);
    for raw in pointer.split('/').skip(1) {
        let token = raw.replace("~1", "/").replace("~0", "~");
        match here {
            Some(Json::Array(items)) => {
                path = format!("{path}[{token}]");
                here = token.parse::<usize>().ok().and_then(|i| items.get(i));
            }
            Some(Json::Object(map)) => {
                path = join(&path, &token);
                here = map.get(&token);
            }
            _ => {
                path = join(&path, &token);
                here = None;
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointer_paths_use_brackets_for_arrays() {
        let schema = json!({ "anyOf": [{ "type": "strin" }] });
        assert_eq!(
            pointer_to_path(&schema, "/anyOf/0/type", "config.schema"),
            "config.schema.anyOf[0].type"
        );
        assert_eq!(
            pointer_to_path(&schema, "", "config.schema"),
            "config.schema"
        );
    }

    #[test]
    fn datetimes_are_rejected() {
        let value: Result<toml::Table, _> =
            toml::from_str("d = 1979-05-27T07:32:00Z\nf = nan\nok = [1, 2.5]");
        let mut p = Problems::default();
        let json = value
            .ok()
            .and_then(|t| to_json(&Value::Table(t), "x", &mut p));
        assert!(json.is_none());
        let fields: Vec<String> = p.into_vec().into_iter().map(|p| p.field).collect();
        assert_eq!(fields, ["x.d", "x.f"]);
    }
}
