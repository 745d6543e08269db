//! `/mcp`: the MCP servers of this session (status, tools, prompts), their
//! tools in full, or a new start for the ones that are down.
use stud_sdk::host::session::{self, Action};
use stud_sdk::prelude::*;
use stud_sdk::session_view::McpServerView;

const DESCRIPTION: &str = "Show the MCP servers of this session (status, tools, prompts), or start the ones that are down again.";

#[derive(Default)]
struct Mcp;

impl Command for Mcp {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new("/mcp", DESCRIPTION).hint("[tools [server] | reconnect]")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        let words: Vec<&str> = args.positional.iter().map(String::as_str).collect();
        match words.as_slice() {
            [] => Ok(CommandOutput::text(status(&session::overview()?.mcp))),
            ["tools"] => Ok(CommandOutput::text(tools(&session::overview()?.mcp, None))),
            ["tools", server] => Ok(CommandOutput::text(tools(
                &session::overview()?.mcp,
                Some(server),
            ))),
            ["reconnect"] => Ok(CommandOutput::text(session::act(&Action::Reload)?)),
            _ => Err(Error::invalid_input(
                "usage: /mcp, /mcp tools [server], /mcp reconnect",
            )),
        }
    }
}

fn status(servers: &[McpServerView]) -> String {
    if servers.is_empty() {
        return "No MCP servers are configured. `stud mcp add` adds one; `.mcp.json` in a trusted project is read too.".into();
    }
    let mut out = String::new();
    for s in servers {
        out.push_str(&format!(
            "{}  {}  {} ({}, {} scope)\n",
            s.id, s.status, s.target, s.transport, s.scope
        ));
        if let Some(info) = &s.info {
            out.push_str(&format!(
                "    {info}: {} tools, {} prompts\n",
                s.tools.len(),
                s.prompts.len()
            ));
        }
        if let Some(e) = &s.error {
            out.push_str(&format!("    {e}\n"));
        }
        if !s.prompts.is_empty() {
            out.push_str(&format!("    prompts: {}\n", s.prompts.join(", ")));
        }
    }
    if servers
        .iter()
        .any(|s| s.status == "failed" || s.status == "disconnected")
    {
        out.push_str("/mcp reconnect starts the servers that are down again.\n");
    }
    out
}

fn tools(servers: &[McpServerView], only: Option<&str>) -> String {
    let chosen: Vec<&McpServerView> = servers
        .iter()
        .filter(|s| only.is_none_or(|o| s.id == o))
        .collect();
    if chosen.is_empty() {
        return match only {
            Some(o) => format!("no MCP server `{o}` in this session; /mcp lists them"),
            None => "No MCP servers are configured.".into(),
        };
    }
    let mut out = String::new();
    for s in chosen {
        out.push_str(&format!("{} ({}):\n", s.id, s.status));
        for t in &s.tools {
            out.push_str(&format!("  {t}\n"));
        }
    }
    out
}

stud_sdk::export_command!(Mcp);
