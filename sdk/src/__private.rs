//! Support for the export macros. Not a public API.

pub use stud_sdk_macros::__bindings;
pub use wit_bindgen;

use std::sync::Mutex;

use crate::Error;

/// The one instance of an extension type inside its component. Components
/// are single-threaded and calls are never re-entrant, so the lock is never
/// contended; it exists to make the static sound.
pub struct Instance<T>(Mutex<Option<T>>);

impl<T: Default> Instance<T> {
    pub const fn new() -> Self {
        Instance(Mutex::new(None))
    }

    /// Run `f` on the instance, creating it with `Default` on first use.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(guard.get_or_insert_with(T::default))
    }
}

impl<T: Default> Default for Instance<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Parse the config text the host passes to `init`.
pub fn parse_config(config: &str) -> Result<serde_json::Value, Error> {
    if config.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(config)
        .map_err(|e| Error::validation("config-invalid", format!("config is not JSON: {e}")))
}

/// Parse a JSON argument the host passes in.
pub fn parse_json(text: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(text).map_err(Error::from)
}

/// Length of [`crate::CONTRACT_VERSION`], for the stamp's array type.
pub const CONTRACT_LEN: usize = crate::CONTRACT_VERSION.len();

/// [`crate::CONTRACT_VERSION`] as the bytes of the custom section.
pub const CONTRACT_BYTES: [u8; CONTRACT_LEN] = {
    let src = crate::CONTRACT_VERSION.as_bytes();
    let mut out = [0u8; CONTRACT_LEN];
    let mut i = 0;
    while i < CONTRACT_LEN {
        out[i] = src[i];
        i += 1;
    }
    out
};

pub type ExtError = crate::wit::stud::extension::types::ExtError;
pub type Res<T> = Result<T, ExtError>;

/// Map an SDK result into the WIT result.
pub fn wit<T>(r: Result<T, Error>) -> Res<T> {
    r.map_err(Into::into)
}
