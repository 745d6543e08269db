//! `secrets`: values the manifest names, resolved by the host. A name the
//! manifest does not declare is refused, so a provider cannot fish for
//! other keys.

use crate::runtime::contract::v0_1::stud::extension::secrets;
use crate::runtime::host_state::HostState;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};

impl secrets::Host for HostState {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, ExtError>> {
        if !self.ext.secrets.iter().any(|s| s == &name) {
            return Ok(Err(ext_error(
                ErrorClass::Validation,
                "secret-undeclared",
                format!(
                    "extension `{}` did not declare the secret `{name}`; add it to `secrets` under [capabilities]",
                    self.ext.id
                ),
            )));
        }
        let resolved = match self.ext.secret_values.get(&name) {
            Some(Ok(value)) => Some(value.clone()),
            Some(Err(why)) => {
                return Ok(Err(ext_error(
                    ErrorClass::Validation,
                    "secret-missing",
                    format!(
                        "the secret `{name}` needed by `{}` is not available: {why}",
                        self.ext.id
                    ),
                )));
            }
            None => self.ext.services.secret(&name),
        };
        Ok(resolved.ok_or_else(|| {
            ext_error(
                ErrorClass::Validation,
                "secret-missing",
                format!(
                    "the secret `{name}` needed by `{}` is not set; set the environment variable {name}, or point `secrets.{}.{name}` in settings.json at another variable ({{\"env\": \"VAR\"}}) or a file ({{\"file\": \"path\"}})",
                    self.ext.id, self.ext.id
                ),
            )
        }))
    }
}
