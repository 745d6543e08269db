//! Compiled JSON Schemas, one per distinct schema per process. A config
//! schema is compiled when its manifest is read (so a broken one is a
//! manifest problem with a field path) and used again when the config is
//! validated at load: compiling a schema costs far more than validating a
//! config against it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// Schemas are few (one per extension with a config or state schema);
/// what a manifest declares is kept for the life of the process.
fn compiled() -> &'static Mutex<HashMap<String, Arc<Validator>>> {
    static COMPILED: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    COMPILED.get_or_init(Default::default)
}

/// The compiled form of `schema`, compiled now if this process has not
/// compiled the same schema before. A schema that does not compile is
/// not kept (its error is reported each time).
pub fn validator(schema: &Value) -> Result<Arc<Validator>, ValidationError<'static>> {
    let key = schema.to_string();
    if let Some(v) = compiled()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        return Ok(v.clone());
    }
    let v = Arc::new(jsonschema::validator_for(schema)?);
    compiled()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, v.clone());
    Ok(v)
}
