//! A tool's argument schema, compiled once, and at the latest before the
//! tool's first call.

use std::sync::OnceLock;

use serde_json::Value;

/// Why a tool's parameter schema cannot check arguments.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SchemaError {
    #[error("its parameter schema is not JSON: {0}")]
    NotJson(String),
    #[error("its parameter schema does not compile: {0}")]
    DoesNotCompile(String),
}

/// The compiled schema a tool's arguments are checked against in the
/// kernel, before any tool code runs.
///
/// A schema the binary vouches for (recorded beside a bundled tool; the
/// tests compile every one) is compiled at the tool's first call rather
/// than at every start, where the ten bundled tools' schemas sat on the
/// way to the first request. Any other schema is compiled when the tool is
/// added, so that a tool whose schema does not compile is left out before
/// the model is told about it.
pub struct ArgSchema {
    compiled: OnceLock<Result<jsonschema::Validator, SchemaError>>,
}

impl ArgSchema {
    /// Compiled now: `Err` leaves the tool out.
    pub fn compile(text: &str) -> Result<Self, SchemaError> {
        let validator = compile(text)?;
        Ok(ArgSchema {
            compiled: OnceLock::from(Ok(validator)),
        })
    }

    /// Compiled at the first [`violations`](Self::violations), from the
    /// same text.
    pub fn vouched() -> Self {
        ArgSchema {
            compiled: OnceLock::new(),
        }
    }

    /// Every violation of `text`'s schema by `args`, one per line, or
    /// `None` if valid. A schema that does not compile refuses every call.
    pub fn violations(&self, text: &str, args: &Value) -> Option<String> {
        let validator = match self.compiled.get_or_init(|| compile(text)) {
            Ok(v) => v,
            Err(e) => return Some(format!("the tool cannot be called: {e}")),
        };
        let errors: Vec<String> = validator
            .iter_errors(args)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!(
                    "{}: {e}",
                    if at.is_empty() {
                        "arguments"
                    } else {
                        at.as_str()
                    }
                )
            })
            .collect();
        (!errors.is_empty()).then(|| errors.join("\n"))
    }
}

fn compile(text: &str) -> Result<jsonschema::Validator, SchemaError> {
    let schema: Value =
        serde_json::from_str(text).map_err(|e| SchemaError::NotJson(e.to_string()))?;
    jsonschema::validator_for(&schema).map_err(|e| SchemaError::DoesNotCompile(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SCHEMA: &str =
        r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#;

    #[test]
    fn a_vouched_schema_checks_arguments_as_a_compiled_one_does() {
        let now = ArgSchema::compile(SCHEMA).unwrap();
        let later = ArgSchema::vouched();
        for args in [json!({"path": "a"}), json!({}), json!({"path": 3})] {
            assert_eq!(
                now.violations(SCHEMA, &args),
                later.violations(SCHEMA, &args)
            );
        }
        assert!(later.violations(SCHEMA, &json!({})).is_some());
        assert_eq!(later.violations(SCHEMA, &json!({"path": "a"})), None);
    }

    #[test]
    fn a_vouched_schema_that_does_not_compile_refuses_every_call() {
        let bad = r#"{"type": 12}"#;
        assert!(matches!(
            ArgSchema::compile(bad),
            Err(SchemaError::DoesNotCompile(_))
        ));
        let later = ArgSchema::vouched();
        let said = later.violations(bad, &json!({})).unwrap();
        assert!(said.contains("does not compile"), "{said}");
        assert!(matches!(
            ArgSchema::compile("{"),
            Err(SchemaError::NotJson(_))
        ));
    }
}
