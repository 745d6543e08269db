//! `when-config`: an extension part that takes part only when the
//! extension's config gives one key something to act on. A hook that runs
//! what the person configured, or a context provider that reads a file the
//! person named, then costs a session nothing where nothing is configured:
//! its component is not even linked for it (issue 42).

use super::problems::Problems;

/// Whether `config` gives `key` something: only a plainly empty value
/// (absent, `null`, `false`, `""`, `[]`, `{}`) does not. Any other value,
/// whatever the extension makes of it, counts.
pub(crate) fn gives(config: &serde_json::Value, key: &str) -> bool {
    use serde_json::Value as J;
    match config.get(key) {
        None | Some(J::Null) | Some(J::Bool(false)) => false,
        Some(J::String(s)) => !s.is_empty(),
        Some(J::Array(a)) => !a.is_empty(),
        Some(J::Object(o)) => !o.is_empty(),
        Some(J::Bool(true)) | Some(J::Number(_)) => true,
    }
}

/// Whether a part gated on `when_config` takes part under `config`: always
/// without a gate, else when [`gives`] says the key holds something.
pub(crate) fn admits(when_config: Option<&str>, config: &serde_json::Value) -> bool {
    when_config.is_none_or(|key| gives(config, key))
}

/// `key` (at field `at`) must be a property the config schema declares: a
/// typo would otherwise leave the part out for good. `field` is what the
/// advice says to remove (`when-config`).
pub(crate) fn read_when_config(
    key: &str,
    at: &str,
    field: &str,
    config_schema: Option<&serde_json::Value>,
    p: &mut Problems,
) -> Option<String> {
    let Some(schema) = config_schema else {
        p.push(
            at,
            format!("names the config key `{key}`, but the extension has no [config] schema; declare it there (properties = {{ {key} = {{ type = \"array\" }} }}) or remove {field}"),
        );
        return None;
    };
    let declared = schema
        .get("properties")
        .and_then(|props| props.as_object())
        .is_some_and(|props| props.contains_key(key));
    if !declared {
        p.push(
            at,
            format!("names `{key}`, which [config].schema does not declare as a property; declare it, or name one of its properties"),
        );
        return None;
    }
    Some(key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_plainly_empty_value_gives_nothing() {
        for empty in [
            json!({}),
            json!({"k": null}),
            json!({"k": false}),
            json!({"k": ""}),
            json!({"k": []}),
            json!({"k": {}}),
        ] {
            assert!(!gives(&empty, "k"), "{empty}");
        }
        for some in [
            json!({"k": true}),
            json!({"k": 0}),
            json!({"k": " "}),
            json!({"k": [null]}),
            json!({"k": {"a": 1}}),
        ] {
            assert!(gives(&some, "k"), "{some}");
        }
    }
}
