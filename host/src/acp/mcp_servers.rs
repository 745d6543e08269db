//! The MCP servers an editor passes at `session/new` (ACP's list shape)
//! as stud server entries in the editor scope: parsed by the same rules
//! as `mcpServers` in settings, then trusted or asked about like any
//! configured server.

use std::path::Path;

use agent_client_protocol::v1::schema;
use serde_json::{Map, Value, json};

use super::failure::Failure;
use crate::kernel::Launched;
use crate::kernel::mcp_hub::{SlotState, trust_question};
use crate::mcp::{McpScope, McpServer, McpTrust, parse_servers};
use crate::paths::StudHome;
use crate::runtime::domain::InteractionStatus;

/// Where messages say the servers came from.
const SOURCE: &str = "session/new mcpServers";

/// ACP's `[{name, value}]` as an object.
fn pairs(list: &Value) -> Value {
    let mut out = Map::new();
    for p in list.as_array().into_iter().flatten() {
        if let (Some(n), Some(v)) = (p["name"].as_str(), p.get("value")) {
            out.insert(n.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// The editor's servers for a session in `root`.
pub fn editor_servers(list: &[schema::McpServer], root: &Path) -> Result<Vec<McpServer>, Failure> {
    let mut entries = Map::new();
    for (i, server) in list.iter().enumerate() {
        let v = serde_json::to_value(server).unwrap_or(Value::Null);
        let field = format!("mcpServers[{i}]");
        let Some(name) = v["name"].as_str() else {
            return Err(Failure::invalid(
                "mcpServers",
                "invalid-mcp-server",
                format!("{field} has no name"),
            ));
        };
        let entry = match v["type"].as_str().unwrap_or("stdio") {
            "stdio" => json!({"command": v["command"], "args": v["args"], "env": pairs(&v["env"])}),
            "http" => json!({"type": "http", "url": v["url"], "headers": pairs(&v["headers"])}),
            other => {
                return Err(Failure::invalid(
                    "mcpServers",
                    "mcp-transport-unsupported",
                    format!(
                        "{field} (`{name}`) uses the `{other}` transport; stud speaks stdio and streamable http"
                    ),
                ));
            }
        };
        entries.insert(name.to_string(), entry);
    }
    let (servers, errors) = parse_servers(
        &entries,
        &McpScope::Editor(root.to_path_buf()),
        Path::new(SOURCE),
    );
    match errors.first() {
        None => Ok(servers),
        Some(e) => Err(Failure::invalid(
            "mcpServers",
            "invalid-mcp-server",
            format!("server `{}`: {}: {}", e.server, e.field, e.reason),
        )),
    }
}

/// Ask the editor about each of its servers not trusted yet (the session
/// is open there now), and start the ones it allows; their tools join
/// the session before its first turn.
pub async fn trust_in_editor(
    launched: &mut Launched,
    home: &StudHome,
    conn: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>,
) {
    let trust = McpTrust::new(home.root());
    let id = launched.session.id.clone();
    let waiting: Vec<McpServer> = launched
        .session
        .mcp()
        .slots()
        .into_iter()
        .filter(|s| matches!(s.server.scope, McpScope::Editor(_)))
        .filter(|s| matches!(s.state, SlotState::NotStarted(_)))
        .map(|s| s.server)
        .collect();
    for server in waiting {
        let status = match trust.status(&server) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("warning: {e}");
                continue;
            }
        };
        let question = trust_question(&server, &status);
        let asked = format!("mcp-trust-{}", server.id);
        let (answer, _) = super::worker::confirm(conn, &id, &asked, &question).await;
        if answer != InteractionStatus::Accepted {
            continue;
        }
        if let Err(e) = trust.grant(&server) {
            eprintln!("warning: {e}");
            continue;
        }
        let hub = launched.session.mcp().clone();
        match hub.start_trusted(&server.id).await {
            Ok(tools) => {
                for w in launched.session.add_mcp_tools(tools) {
                    eprintln!("warning: {w}");
                }
            }
            Err(e) => eprintln!("warning: MCP server `{}` did not start: {e}", server.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(v: Value) -> Vec<schema::McpServer> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn both_shapes_become_editor_scoped_entries() {
        let list = servers(json!([
            {"name": "local", "command": "/bin/srv", "args": ["--x"], "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "http", "name": "remote", "url": "http://127.0.0.1:9/mcp", "headers": []}
        ]));
        let got = editor_servers(&list, Path::new("/p")).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|s| s.scope == McpScope::Editor("/p".into())));
    }

    #[test]
    fn a_bad_id_is_refused_by_name() {
        let list = servers(json!([{"name": "bad name", "command": "x", "args": [], "env": []}]));
        let e = editor_servers(&list, Path::new("/p")).unwrap_err();
        assert!(e.to_string().contains("`bad name`"), "{e}");
    }
}
