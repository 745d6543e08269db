//! `stud mcp login|logout`: OAuth for a remote MCP server, from the
//! terminal. The authorization address is printed (and opened in a
//! browser when there is a display); the browser comes back to a loopback
//! port; the tokens go to the stud home, never to settings.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::mcp::oauth::{self, LoginUi, TokenStore};
use crate::mcp::{McpServers, McpTrust, McpTrustStatus, Transport};
use crate::paths::StudHome;

struct Terminal {
    server: String,
    browser: bool,
}

impl LoginUi for Terminal {
    fn open(&self, url: &str) {
        errln!(
            "To log in to MCP server `{}`, open this address in a browser:\n\n  {url}\n",
            self.server
        );
        if self.browser && open_browser(url) {
            errln!("(a browser was asked to open it)");
        }
        errln!(
            "Waiting for the browser to come back (up to {} minutes; Ctrl-C cancels)…",
            oauth::login::WAIT.as_secs() / 60
        );
    }
}

/// A browser only where there is a screen to show it on.
fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        Some("open")
    } else if cfg!(unix)
        && (std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some())
    {
        Some("xdg-open")
    } else {
        None
    };
    opener.is_some_and(|cmd| {
        std::process::Command::new(cmd)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .is_ok()
    })
}

pub fn login(
    home: &StudHome,
    servers: &McpServers,
    trust: &McpTrust,
    name: &str,
    browser: bool,
) -> anyhow::Result<ExitCode> {
    let Some(server) = servers.server(name) else {
        bail!(super::mcp::unknown(name, servers));
    };
    // Logging in contacts the server's URL: a server from a project file
    // is trusted first, as before it is started.
    match trust.status(server)? {
        McpTrustStatus::Trusted => {}
        status => bail!(
            "MCP server `{name}` is {}; trust it first (`stud mcp trust {name}`), then log in",
            status.as_str()
        ),
    }
    let ui = Terminal {
        server: name.to_string(),
        browser,
    };
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let got = rt.block_on(oauth::login(server, home.root(), &ui, oauth::login::WAIT))?;
    let scopes = match got.scopes.is_empty() {
        true => String::new(),
        false => format!(" (scopes: {})", got.scopes.join(" ")),
    };
    let lifetime = match got.expires_in {
        Some(d) => format!("; the token lasts {}", human(d)),
        None => String::new(),
    };
    let refresh = match got.refreshable {
        true => " and is renewed before it expires",
        false => " (no refresh token: log in again when it expires)",
    };
    outln!("logged in to MCP server `{name}`{scopes}{lifetime}{refresh}");
    Ok(ExitCode::SUCCESS)
}

fn human(d: Duration) -> String {
    match d.as_secs() {
        s if s >= 7200 => format!("{} hours", s / 3600),
        s if s >= 120 => format!("{} minutes", s / 60),
        s => format!("{s} seconds"),
    }
}

/// Forget the tokens of `name`: those for its configured URL, and any
/// kept under that server id (a server removed or moved since).
pub fn logout(home: &StudHome, servers: &McpServers, name: &str) -> anyhow::Result<ExitCode> {
    let mut removed = false;
    if let Some(server) = servers.server(name)
        && let Transport::Http { url, .. } = &server.transport
    {
        removed |= TokenStore::new(home.root(), name, url).remove()?;
    }
    removed |= remove_named(&home.root().join(oauth::store::FOLDER), name)?;
    if removed {
        outln!("logged out of MCP server `{name}`: its tokens are deleted");
    } else {
        outln!("MCP server `{name}` had no login kept; nothing changed");
    }
    Ok(ExitCode::SUCCESS)
}

fn remove_named(dir: &Path, name: &str) -> anyhow::Result<bool> {
    let mut removed = false;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(false);
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let named = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v["server"] == name);
        if named {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot delete {}", path.display()))?;
            removed = true;
        }
    }
    Ok(removed)
}
