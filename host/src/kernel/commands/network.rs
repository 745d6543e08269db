//! `/network-policy allow|deny`: a host grant for an extension, written to
//! the global settings (`network.<id>`) after the person confirmed it. The
//! kernel asks, not the command: a command cannot grant network access on
//! its own. The grant takes effect when the extension is next loaded.

use serde_json::{Map, Value};

use super::CommandEnv;
use crate::atomic_write::write_atomic;
use crate::config::Settings;
use crate::kernel::interaction::{Answer, Interactions};
use crate::manifest::HostPattern;
use crate::runtime::bindings::stud::extension::interaction::{InteractionKind, InteractionStatus};
use crate::runtime::bindings::stud::extension::session::NetworkChange;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Allow,
    Deny,
}

pub async fn change(
    env: &CommandEnv,
    interactions: &Interactions,
    change: &NetworkChange,
    how: Change,
) -> Result<String, ExtError> {
    let invalid = |m: String| ext_error(ErrorClass::Validation, "network-change-invalid", m);
    let id = change.extension.as_str();
    let Some(found) = env.found.iter().find(|d| d.manifest.id.as_str() == id) else {
        return Err(invalid(format!(
            "no extension `{id}` is installed; /network-policy show lists those that use the network"
        )));
    };
    let host = change
        .host
        .parse::<HostPattern>()
        .map_err(|e| invalid(format!("`{}`: {e}", change.host)))?
        .to_string();
    let file = env.home.settings_file();
    let verb = match how {
        Change::Allow => "Allow",
        Change::Deny => "Stop allowing",
    };
    let prompt = format!(
        "{verb} `{id}` to reach {host}? This changes network.{id} in {}",
        file.display()
    );
    match interactions.request(InteractionKind::Confirm(prompt)).await {
        Answer::Response(r) if r.status == InteractionStatus::Accepted => {}
        Answer::Halt => {
            return Err(ext_error(
                ErrorClass::Session,
                "needs-confirmation",
                "a network grant needs a person to confirm it; run the command in an interactive session".to_string(),
            ));
        }
        Answer::Response(_) => return Ok("not changed".into()),
    }
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "{}".into(),
        Err(e) => return Err(io_error(&file, &e)),
    };
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| {
        invalid(format!(
            "{} is not valid JSON ({e}); fix it first, nothing was written",
            file.display()
        ))
    })?;
    let Some(root) = doc.as_object_mut() else {
        return Err(invalid(format!(
            "{} does not hold a JSON object; fix it first, nothing was written",
            file.display()
        )));
    };
    let network = root
        .entry("network")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(network) = network.as_object_mut() else {
        return Err(invalid(format!(
            "`network` in {} is not an object; fix it first, nothing was written",
            file.display()
        )));
    };
    let hosts = network
        .entry(id.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(hosts) = hosts.as_array_mut() else {
        return Err(invalid(format!(
            "`network.{id}` in {} is not a list; fix it first, nothing was written",
            file.display()
        )));
    };
    let present = hosts.iter().any(|h| h.as_str() == Some(host.as_str()));
    let message = match (how, present) {
        (Change::Allow, true) => return Ok(format!("`{id}` may already reach {host}")),
        (Change::Deny, false) => {
            return Ok(format!(
                "{host} is not in network.{id} of the global settings; nothing to remove (hosts in the manifest or a project's settings are not changed here)"
            ));
        }
        (Change::Allow, false) => {
            hosts.push(Value::String(host.clone()));
            let caveat = if found.manifest.capabilities.user_hosts {
                ""
            } else {
                " (its manifest does not say user-hosts = true, so the grant is not used until it does)"
            };
            format!(
                "`{id}` may reach {host} from its next load (/reload or the next session){caveat}"
            )
        }
        (Change::Deny, true) => {
            hosts.retain(|h| h.as_str() != Some(host.as_str()));
            format!("`{id}` may no longer reach {host} from its next load")
        }
    };
    // Never write settings stud could not read back.
    Settings::from_value(&doc).map_err(|e| {
        invalid(format!(
            "the change would make {} invalid ({e}); nothing was written",
            file.display()
        ))
    })?;
    let mut bytes = serde_json::to_vec_pretty(&doc)
        .map_err(|e| ext_error(ErrorClass::ExtensionHost, "encode", e.to_string()))?;
    bytes.push(b'\n');
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, &e))?;
    }
    write_atomic(&file, &bytes).map_err(|e| io_error(&file, &e))?;
    Ok(message)
}

fn io_error(path: &std::path::Path, e: &std::io::Error) -> ExtError {
    ext_error(
        ErrorClass::Session,
        "settings-write",
        format!("cannot write {}: {e}", path.display()),
    )
}
