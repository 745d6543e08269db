//! The MCP servers of a session: at start every trusted server is started
//! in parallel (each within its start timeout, so a slow or broken one
//! never holds the session past it) and its tools join the session's
//! tools as `mcp__<server>__<tool>`. An untrusted server is never started:
//! the warning says how to trust it. Connections end with the session.

use std::path::Path;
use std::sync::Arc;

use crate::extensions::ProjectScope;
use crate::mcp::client;
use crate::mcp::link::McpLink;
use crate::mcp::tool::{McpTool, tool_name};
use crate::mcp::{McpServer, McpServers, McpTrust, McpTrustStatus};
use crate::paths::StudHome;
use crate::runtime::bindings::stud::extension::tool_types::ToolSpec;

/// The tools of every trusted server that started, and one warning per
/// problem (a bad entry, an untrusted or failed server, a tool left out).
pub async fn start(
    home: &StudHome,
    project: &ProjectScope,
    cwd: &Path,
) -> (Vec<(Arc<McpTool>, ToolSpec)>, Vec<String>) {
    let servers = McpServers::discover(home, project, cwd);
    let mut warnings: Vec<String> = servers.errors.iter().map(ToString::to_string).collect();
    warnings.extend(servers.notes.iter().cloned());
    let trust = McpTrust::new(home.root());
    let mut trusted = Vec::new();
    for s in &servers.servers {
        match trust.status(s) {
            Ok(McpTrustStatus::Trusted) => trusted.push(s),
            Ok(status) => warnings.push(format!(
                "MCP server `{}` ({}) was not started: it is {}; `stud mcp trust {}` trusts it as configured now",
                s.id,
                s.describe(),
                status.as_str(),
                s.id
            )),
            Err(e) => warnings.push(e.to_string()),
        }
    }
    let started = futures::future::join_all(trusted.into_iter().map(|s| one(home, s, cwd))).await;
    let mut tools = Vec::new();
    for r in started {
        match r {
            Ok((t, w)) => {
                tools.extend(t);
                warnings.extend(w);
            }
            Err(e) => warnings.push(e),
        }
    }
    (tools, warnings)
}

type Started = (Vec<(Arc<McpTool>, ToolSpec)>, Vec<String>);

async fn one(home: &StudHome, server: &McpServer, cwd: &Path) -> Result<Started, String> {
    let log = client::stderr_log(home.root(), &server.id);
    let timeout = server.start_timeout.unwrap_or(client::START_TIMEOUT);
    let conn = client::connect(server, cwd, &log, timeout, &client::process_env)
        .await
        .map_err(|e| e.to_string())?;
    let listed = conn.tools().await.map_err(|e| e.to_string())?;
    let link = Arc::new(McpLink::new(server.clone(), cwd.to_path_buf(), log, conn));
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    for t in listed {
        let Some(name) = tool_name(&server.id, &t.name) else {
            warnings.push(format!(
                "tool `{}` of MCP server `{}` left out: `mcp__{}__<tool>` would be longer than the 64 characters providers accept",
                t.name, server.id, server.id
            ));
            continue;
        };
        let hint = t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
        let description = t
            .description
            .as_deref()
            .map(str::to_string)
            .or(t.title.clone())
            .unwrap_or_default();
        let spec = ToolSpec {
            name,
            description: format!("[MCP server `{}`] {description}", server.id),
            parameters: serde_json::to_string(&*t.input_schema)
                .unwrap_or_else(|_| "{\"type\":\"object\"}".into()),
            // A server's hint skips approvals only where the user said
            // its hints are to be believed.
            read_only: hint && server.trust_read_only_hints,
        };
        tools.push((Arc::new(McpTool::new(&t.name, link.clone())), spec));
    }
    Ok((tools, warnings))
}
