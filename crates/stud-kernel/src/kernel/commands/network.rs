//! `/network-policy allow|deny`: a host grant for an extension, written to
//! the global settings (`network.<id>`) after the person confirmed it. The
//! kernel asks, not the command: a command cannot grant network access on
//! its own. The grant takes effect when the extension is next loaded.

use serde_json::Value;

use super::CommandEnv;
use crate::config::edit::{EditError, edit_settings, list_at, object_at};
use crate::kernel::interaction::{Answer, Interactions};
use crate::manifest::HostPattern;
use crate::runtime::domain::NetworkChange;
use crate::runtime::domain::{InteractionKind, InteractionStatus};
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
    let outcome = edit_settings(&file, |root| {
        let network = object_at(root, "network", "network")?;
        let hosts = list_at(network, id, &format!("network.{id}"))?;
        let present = hosts.iter().any(|h| h.as_str() == Some(host.as_str()));
        Ok(match (how, present) {
            (Change::Allow, true) => (format!("`{id}` may already reach {host}"), false),
            (Change::Deny, false) => (
                format!(
                    "{host} is not in network.{id} of the global settings; nothing to remove (hosts in the manifest or a project's settings are not changed here)"
                ),
                false,
            ),
            (Change::Allow, false) => {
                hosts.push(Value::String(host.clone()));
                let caveat = if found.manifest.capabilities.user_hosts {
                    ""
                } else {
                    " (its manifest does not say user-hosts = true, so the grant is not used until it does)"
                };
                (
                    format!(
                        "`{id}` may reach {host} from its next load (/reload or the next session){caveat}"
                    ),
                    true,
                )
            }
            (Change::Deny, true) => {
                hosts.retain(|h| h.as_str() != Some(host.as_str()));
                (
                    format!("`{id}` may no longer reach {host} from its next load"),
                    true,
                )
            }
        })
    });
    outcome.map_err(|e| match e {
        EditError::Read { .. } | EditError::Write { .. } => {
            ext_error(ErrorClass::Session, "settings-write", e.to_string())
        }
        _ => invalid(e.to_string()),
    })
}
