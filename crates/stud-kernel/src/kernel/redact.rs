//! Known secret values are cut out of everything the bus carries (events,
//! logs, what subscribers write to disk) and out of error messages, so a
//! provider that echoes its key in an error cannot leak it.

use serde_json::Value;

/// What replaces a secret value.
pub const REDACTED: &str = "[REDACTED]";
/// Shorter values are not treated as secrets (they would match innocent
/// text everywhere).
const MIN_SECRET_LEN: usize = 8;

/// The secret values to cut, longest first so overlapping values go whole.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values
            .into_iter()
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Redactor { values }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Cut secret values out of `text` in place; no copy when it has none.
    pub fn scrub(&self, text: &mut String) {
        if self.values.iter().any(|v| text.contains(v.as_str())) {
            *text = self.text(text);
        }
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), REDACTED);
            }
        }
        out
    }

    /// Every string (and key) of a JSON value, in place.
    pub fn value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) if self.values.iter().any(|v| s.contains(v.as_str())) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let dirty: Vec<String> = map
                    .keys()
                    .filter(|k| self.values.iter().any(|v| k.contains(v.as_str())))
                    .cloned()
                    .collect();
                for k in dirty {
                    if let Some(v) = map.remove(&k) {
                        map.insert(self.text(&k), v);
                    }
                }
                map.values_mut().for_each(|v| self.value(v));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cuts_values_everywhere() {
        let r = Redactor::new(["sk-test-123456".to_string(), "short".to_string()]);
        let mut v = json!({"a": "key sk-test-123456 here", "b": ["x", {"sk-test-123456": 1}], "c": "short"});
        r.value(&mut v);
        let text = v.to_string();
        assert!(!text.contains("sk-test-123456"), "{text}");
        assert!(text.contains(REDACTED) && text.contains("short"), "{text}");
    }
}
