//! `stud mcp list|add|remove|trust|revoke` (`login|logout` in `mcp_login`): the MCP servers stud knows and
//! which of them the user trusts. A server added here is trusted (the
//! user typed it); one that arrives in a file is asked about first.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use crate::config::edit::{edit_json, object_at};
use crate::extensions::trust::recorded_scope;
use crate::mcp::{
    McpScope, McpServers, McpTrust, McpTrustStatus, client, parse_servers, project_file,
};
use crate::paths::StudHome;

#[derive(Subcommand)]
pub enum McpCommand {
    /// Every configured server: scope, what it runs or contacts, trust.
    List {
        #[arg(long)]
        json: bool,
        /// Also start each trusted server, list its tools and stop it
        /// again (an untrusted one is never started).
        #[arg(long)]
        check: bool,
    },
    /// Add a server (and trust it): `stud mcp add NAME -- COMMAND [ARGS...]`
    /// for stdio, `stud mcp add NAME --url URL` for streamable HTTP.
    Add(AddArgs),
    /// Remove a server from the global settings (or with --project from
    /// this folder's .mcp.json) and forget its trust.
    Remove {
        name: String,
        #[arg(long)]
        project: bool,
    },
    /// Trust a configured server as it is configured now.
    Trust { name: String },
    /// Forget the trust decision for a server (it is asked about again).
    Revoke { name: String },
    /// Log in to an HTTP server that asks for OAuth: prints the address to
    /// open (and opens a browser where there is a display), waits for the
    /// browser on a loopback port, keeps the tokens in the stud home.
    Login {
        name: String,
        /// Only print the address; do not try to open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the tokens `stud mcp login` kept for a server.
    Logout { name: String },
    /// Be an MCP server on stdio: another MCP client (an IDE, an agent)
    /// calls this folder's stud tools, each call through stud's authority
    /// stack; one that needs a person's approval is refused
    /// (approval-required).
    Serve {
        /// Security mode for the session: ask (the default; every call that
        /// would ask is refused), allowlist or yolo.
        #[arg(long)]
        mode: Option<crate::kernel::Mode>,
        /// Allowlist entry `tool` or `tool:pattern` (repeatable).
        #[arg(long = "allow")]
        allow: Vec<String>,
        /// Also offer the tool `prompt`, which runs a whole stud turn (stud's
        /// provider and model) and answers with its final text.
        #[arg(long)]
        prompt_tool: bool,
        /// Serve streamable HTTP at this loopback address (`PORT` or
        /// `127.0.0.1:PORT`; port 0 picks one) instead of stdio. Clients
        /// send `Authorization: Bearer <token>`: the token in
        /// STUD_MCP_SERVE_TOKEN, or one stud makes and prints.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
}

#[derive(Args)]
pub struct AddArgs {
    /// The server id (letters, digits, `_`, `-`; no `__`); its tools are
    /// named `mcp__<id>__<tool>`.
    name: String,
    /// A streamable HTTP server at this URL (https://, or http:// to
    /// 127.0.0.1).
    #[arg(long)]
    url: Option<String>,
    /// `NAME=VALUE` for a stdio server's environment; VALUE may reference
    /// a variable as `${VAR}`.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// `NAME=VALUE` HTTP header; VALUE may reference a variable as
    /// `${VAR}` (a project file must).
    #[arg(long = "header", value_name = "NAME=VALUE")]
    headers: Vec<String>,
    /// Write it to this folder's .mcp.json instead of the global settings.
    #[arg(long)]
    project: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true)]
    command: Vec<String>,
}

pub fn run(cmd: McpCommand) -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let trust = McpTrust::new(home.root());
    let found = || McpServers::discover(&home, &recorded_scope(home.root(), &cwd), &cwd);
    match cmd {
        McpCommand::List { json, check } => {
            let servers = found();
            let checks = if check {
                let rt =
                    tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
                Some(rt.block_on(check_all(&servers, &trust, &home, &cwd)))
            } else {
                None
            };
            list(&home, &servers, &trust, json, checks.as_deref())
        }
        McpCommand::Add(args) => add(&home, &cwd, &trust, args),
        McpCommand::Login { name, no_browser } => {
            super::mcp_login::login(&home, &found(), &trust, &name, !no_browser)
        }
        McpCommand::Logout { name } => super::mcp_login::logout(&home, &found(), &name),
        McpCommand::Serve {
            mode,
            allow,
            prompt_tool,
            http,
        } => {
            let http = http.as_deref().map(listen_addr).transpose()?;
            serve(home, cwd, mode, allow, prompt_tool, http)
        }
        McpCommand::Remove { name, project } => remove(&home, &cwd, &trust, &name, project),
        McpCommand::Trust { name } => {
            let servers = found();
            let Some(server) = servers.server(&name) else {
                bail!(unknown(&name, &servers));
            };
            trust.grant(server)?;
            outln!(
                "trusted MCP server `{name}` ({} scope): {}",
                server.scope.as_str(),
                server.describe()
            );
            for w in server.warnings() {
                outln!("  ! {w}");
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Revoke { name } => {
            if trust.revoke(&name)? {
                outln!(
                    "MCP server `{name}` is no longer trusted; it is asked about before its next start"
                );
            } else {
                outln!("MCP server `{name}` had no trust decision; nothing changed");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub(super) fn unknown(name: &str, servers: &McpServers) -> String {
    let ids: Vec<&str> = servers.servers.iter().map(|s| s.id.as_str()).collect();
    if ids.is_empty() {
        format!("no MCP server `{name}` is configured (none is); add one with `stud mcp add`")
    } else {
        format!(
            "no MCP server `{name}` is configured (configured: {}); `stud mcp list` shows them",
            ids.join(", ")
        )
    }
}

/// What starting a server showed.
enum Check {
    Connected { info: String, tools: Vec<String> },
    Failed(String),
    NotStarted(&'static str),
}

impl Check {
    fn json(&self) -> Value {
        match self {
            Check::Connected { info, tools } => {
                json!({"status": "connected", "server": info, "tools": tools})
            }
            Check::Failed(e) => json!({"status": "failed", "error": e}),
            Check::NotStarted(why) => json!({"status": "not started", "why": why}),
        }
    }

    fn line(&self) -> String {
        match self {
            Check::Connected { info, tools } => {
                format!(
                    "connected to {info}; {} tools: {}",
                    tools.len(),
                    tools.join(", ")
                )
            }
            Check::Failed(e) => format!("failed: {e}"),
            Check::NotStarted(why) => format!("not started: {why}"),
        }
    }
}

/// Start every trusted server at once (each within its start timeout),
/// list its tools, stop it.
async fn check_all(
    servers: &McpServers,
    trust: &McpTrust,
    home: &StudHome,
    cwd: &Path,
) -> Vec<Check> {
    let checks = servers.servers.iter().map(|s| async move {
        match trust.status(s) {
            Ok(McpTrustStatus::Trusted) => {}
            Ok(_) => return Check::NotStarted("not trusted (`stud mcp trust ID`)"),
            Err(e) => return Check::Failed(e.to_string()),
        }
        let log = client::stderr_log(home.root(), &s.id);
        let timeout = s.start_timeout.unwrap_or(client::START_TIMEOUT);
        let mut side = client::ClientSide::for_project(cwd);
        side.logins = Some(home.root().to_path_buf());
        let conn = match client::connect(s, cwd, &log, timeout, &client::process_env, &side).await {
            Ok(c) => c,
            Err(e) => return Check::Failed(e.to_string()),
        };
        let out = match conn.tools().await {
            Ok(tools) => Check::Connected {
                info: conn.server_info.clone(),
                tools: tools.iter().map(|t| t.name.to_string()).collect(),
            },
            Err(e) => Check::Failed(e.to_string()),
        };
        conn.close().await;
        out
    });
    futures::future::join_all(checks).await
}

/// Whether `stud mcp login` kept tokens for an HTTP server's URL.
fn logged_in(home: &StudHome, s: &crate::mcp::McpServer) -> Option<bool> {
    match &s.transport {
        crate::mcp::Transport::Http { url, .. } => {
            Some(crate::mcp::oauth::TokenStore::new(home.root(), &s.id, url).exists())
        }
        crate::mcp::Transport::Stdio { .. } => None,
    }
}

fn list(
    home: &StudHome,
    servers: &McpServers,
    trust: &McpTrust,
    as_json: bool,
    checks: Option<&[Check]>,
) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    for s in &servers.servers {
        let status = trust.status(s)?;
        rows.push((s, status));
    }
    let check_of = |i: usize| checks.and_then(|c| c.get(i));
    if as_json {
        let out = json!({
            "servers": rows.iter().enumerate().map(|(i, (s, t))| {
                let mut row = json!({
                    "id": s.id,
                    "scope": s.scope.as_str(),
                    "file": s.file.display().to_string(),
                    "transport": match s.transport { crate::mcp::Transport::Stdio { .. } => "stdio", crate::mcp::Transport::Http { .. } => "http" },
                    "target": s.describe(),
                    "warnings": s.warnings(),
                    "trust": t.as_str(),
                });
                if let Some(c) = check_of(i) {
                    row["check"] = c.json();
                }
                if let Some(kept) = logged_in(home, s) {
                    row["login"] = json!(if kept { "kept" } else { "none" });
                }
                row
            }).collect::<Vec<_>>(),
            "errors": servers.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            "notes": servers.notes,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        if rows.is_empty() {
            outln!(
                "No MCP servers are configured; add one with `stud mcp add NAME -- COMMAND ARGS...`"
            );
        }
        for (i, (s, t)) in rows.iter().enumerate() {
            outln!(
                "{:<20} {:<8} {:<22} {}",
                s.id,
                s.scope.as_str(),
                t.as_str(),
                s.describe()
            );
            for w in s.warnings() {
                outln!("{:<20} ! {w}", "");
            }
            if logged_in(home, s) == Some(true) {
                outln!(
                    "{:<20} logged in (`stud mcp logout {}` forgets it)",
                    "",
                    s.id
                );
            }
            if let Some(c) = check_of(i) {
                outln!("{:<20} {}", "", c.line());
            }
        }
        for e in &servers.errors {
            errln!("error: {e}");
        }
        for n in &servers.notes {
            errln!("note: {n}");
        }
    }
    let failed = checks.is_some_and(|c| c.iter().any(|c| matches!(c, Check::Failed(_))));
    Ok(if servers.errors.is_empty() && !failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `NAME=VALUE` pairs into a JSON object.
fn pairs(items: &[String], flag: &str) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for item in items {
        let Some((k, v)) = item.split_once('=') else {
            bail!("--{flag} `{item}` is not NAME=VALUE");
        };
        if k.is_empty() {
            bail!("--{flag} `{item}` has no name before `=`");
        }
        out.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(out)
}

fn entry(args: &AddArgs) -> anyhow::Result<Value> {
    match (&args.url, args.command.as_slice()) {
        (Some(_), [_, ..]) => bail!(
            "give either --url (an http server) or a command after `--` (a stdio server), not both"
        ),
        (None, []) => bail!(
            "say what to run: `stud mcp add {} -- COMMAND [ARGS...]`, or `--url URL` for an http server",
            args.name
        ),
        (Some(url), []) => {
            if !args.env.is_empty() {
                bail!("--env is for stdio servers; an http server takes --header");
            }
            let mut e = json!({"type": "http", "url": url});
            if !args.headers.is_empty() {
                e["headers"] = Value::Object(pairs(&args.headers, "header")?);
            }
            Ok(e)
        }
        (None, [command, rest @ ..]) => {
            if !args.headers.is_empty() {
                bail!("--header is for http servers; a stdio server takes --env");
            }
            let mut e = json!({"command": command, "args": rest});
            if !args.env.is_empty() {
                e["env"] = Value::Object(pairs(&args.env, "env")?);
            }
            Ok(e)
        }
    }
}

fn add(home: &StudHome, cwd: &Path, trust: &McpTrust, args: AddArgs) -> anyhow::Result<ExitCode> {
    let entry = entry(&args)?;
    let (scope, file) = if args.project {
        let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        (McpScope::Project(root), project_file(cwd))
    } else {
        (McpScope::Global, home.settings_file())
    };
    // Checked as it will be read back, before anything is written.
    let mut one = Map::new();
    one.insert(args.name.clone(), entry.clone());
    let (mut ok, errors) = parse_servers(&one, &scope, &file);
    if let Some(e) = errors.first() {
        bail!("{e}; nothing was written");
    }
    let Some(server) = ok.pop() else {
        bail!(
            "the entry for `{}` is disabled; nothing was written",
            args.name
        );
    };
    let name = args.name.clone();
    let replaced = edit_json(&file, !args.project, |root| {
        let servers = object_at(root, "mcpServers", "mcpServers")?;
        let replaced = servers.insert(name.clone(), entry.clone()).is_some();
        Ok((replaced, true))
    })?;
    trust.grant(&server)?;
    outln!(
        "{} MCP server `{}` in {} and trusted it: {}",
        if replaced { "replaced" } else { "added" },
        server.id,
        file.display(),
        server.describe()
    );
    for w in server.warnings() {
        outln!("  ! {w}");
    }
    if let McpScope::Project(_) = scope {
        outln!("(others who open this project are asked before it starts for them)");
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(
    home: &StudHome,
    cwd: &Path,
    trust: &McpTrust,
    name: &str,
    project: bool,
) -> anyhow::Result<ExitCode> {
    let file = if project {
        project_file(cwd)
    } else {
        home.settings_file()
    };
    if project && !file.is_file() {
        bail!("{} does not exist; nothing to remove", file.display());
    }
    let removed = edit_json(&file, !project, |root| {
        let removed = drop_server(root, name);
        Ok((removed, removed))
    })?;
    trust.revoke(name)?;
    if removed {
        outln!("removed MCP server `{name}` from {}", file.display());
        Ok(ExitCode::SUCCESS)
    } else {
        errln!(
            "error: no MCP server `{name}` in {}; `stud mcp list` shows where each one is configured",
            file.display()
        );
        Ok(ExitCode::from(1))
    }
}

fn drop_server(root: &mut Map<String, Value>, name: &str) -> bool {
    root.get_mut("mcpServers")
        .and_then(Value::as_object_mut)
        .is_some_and(|m| m.remove(name).is_some())
}

/// `stud mcp serve`: a headless session whose tools an MCP client calls
/// over stdio (stdout carries the protocol; diagnostics go to stderr).
fn serve(
    home: StudHome,
    cwd: std::path::PathBuf,
    mode: Option<crate::kernel::Mode>,
    allow: Vec<String>,
    prompt_tool: bool,
    http: Option<std::net::SocketAddr>,
) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async {
        // Over HTTP from a shell, the person's terminal is free: approvals
        // are asked there. On stdio the client owns stdin.
        let ask_here = http.is_some() && std::io::IsTerminal::is_terminal(&std::io::stdin());
        let questions = ask_here.then(|| {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            super::terminal_asker::spawn(rx);
            tx
        });
        let opts = crate::kernel::LaunchOptions {
            mode,
            allow,
            // A client's tools are there from its first `tools/list`.
            settle_mcp: true,
            replay: None,
            headless: !ask_here,
            questions,
            ..crate::kernel::LaunchOptions::headless(home, cwd)
        };
        let launched = crate::kernel::launch(opts).await?;
        for w in &launched.warnings {
            errln!("warning: {w}");
        }
        errln!(
            "stud mcp serve: session {} in the {} mode, tools: {}",
            launched.session.id,
            launched.session.mode().as_str(),
            launched
                .session
                .offered_tool_specs()
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut launched = match http {
            None => crate::mcp::serve::serve_stdio(launched, prompt_tool).await?,
            Some(addr) => serve_http(launched, prompt_tool, addr).await?,
        };
        launched.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// `--http`'s value: a port on 127.0.0.1, or an address.
fn listen_addr(text: &str) -> anyhow::Result<std::net::SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok((std::net::Ipv4Addr::LOCALHOST, port).into());
    }
    text.parse().map_err(|_| {
        anyhow::anyhow!(
            "--http `{text}` is neither a port nor an address; write e.g. `8765` or `127.0.0.1:8765`"
        )
    })
}

/// Streamable HTTP until Ctrl-C or SIGTERM, with the token printed once
/// when stud made it.
async fn serve_http(
    launched: crate::kernel::Launched,
    prompt_tool: bool,
    addr: std::net::SocketAddr,
) -> anyhow::Result<crate::kernel::Launched> {
    use crate::mcp::serve_http::{Listening, ServeToken};
    let (token, made) = match std::env::var("STUD_MCP_SERVE_TOKEN") {
        Ok(given) => (
            ServeToken::given(given).context(
                "STUD_MCP_SERVE_TOKEN is shorter than 16 characters; choose a longer one",
            )?,
            false,
        ),
        Err(_) => (ServeToken::random(), true),
    };
    let shown = made.then(|| token.as_str().to_string());
    let stop = tokio_util::sync::CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            if let Ok(mut term) = signal(SignalKind::terminate()) {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            } else {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        on_signal.cancel();
    });
    let ready = move |l: Listening| match shown {
        Some(t) => errln!(
            "stud mcp serve: listening on {}; clients send `Authorization: Bearer {t}`",
            l.url
        ),
        None => errln!(
            "stud mcp serve: listening on {}; clients send the token in STUD_MCP_SERVE_TOKEN",
            l.url
        ),
    };
    Ok(crate::mcp::serve_http::serve_http(launched, prompt_tool, addr, token, ready, stop).await?)
}
