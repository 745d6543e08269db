//! Reading `--output-format stream-json` output: the events and the
//! final result line.

use serde_json::Value;

/// Every event line of the output, in order.
pub fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_some())
        .collect()
}

/// The `{"type": "result"}` line.
pub fn result(text: &str) -> Value {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap_or_else(|| panic!("no result line in {text}"))
}

/// The events called `name`.
pub fn named<'a>(evs: &'a [Value], name: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["event"] == name).collect()
}
