//! JSON written for people and diffs: object keys in sorted order.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A JSON value with every object's keys in sorted order (files diff
/// cleanly whatever the map implementation).
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let ordered: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().collect::<Map<String, Value>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
