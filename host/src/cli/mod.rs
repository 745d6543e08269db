//! Command-line interface. Exit codes: 0 success, 1 failure, 2 usage error.
//!
//! What stud prints for people goes through `outln!`/`errln!`/`errout!`:
//! names, paths, settings values, model text and errors are data, and a
//! control character in them must not steer the terminal
//! (`stud_protocol::terminal::safe`). JSON output is printed as is (JSON
//! escapes control characters itself).

/// `println!` for people: the line is made terminal-safe.
macro_rules! outln {
    ($($arg:tt)*) => {
        println!("{}", stud_protocol::terminal::safe(&format!($($arg)*)))
    };
}

/// `eprintln!` for people: the line is made terminal-safe.
macro_rules! errln {
    ($($arg:tt)*) => {
        eprintln!("{}", stud_protocol::terminal::safe(&format!($($arg)*)))
    };
}

/// `eprint!` for people (a prompt): made terminal-safe.
macro_rules! errout {
    ($($arg:tt)*) => {
        eprint!("{}", stud_protocol::terminal::safe(&format!($($arg)*)))
    };
}

mod agents;
mod audit;
mod config;
mod console;
mod ext;
mod mcp;
mod mcp_login;
mod run;
mod screen;
mod session;
mod session_list;
mod session_replay;
mod session_show;
mod signals;
mod skills;
mod terminal_asker;
mod trust;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "stud",
    version,
    about = "An agent CLI whose extensions are sandboxed WebAssembly components",
    // `stud`, `stud "PROMPT"` and `stud -p` are `stud run ...`: the habits
    // people bring from other agent CLIs. A first word that names a
    // command is that command (`stud run ext` sends "ext" as a prompt).
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: run::RunArgs,
    /// Show where the time goes (start-up phases, turns, stages, hooks and
    /// extension calls, each with its duration) on stderr; FILTER like
    /// `stud=trace` (default `stud=debug`). RUST_LOG works too.
    #[arg(
        long,
        global = true,
        value_name = "FILTER",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = crate::diagnostics::DEFAULT_FILTER
    )]
    debug: Option<String>,
    /// Write those diagnostics to ~/.stud/logs/debug.log instead of stderr
    /// (use it with the full-screen UI); implies --debug.
    #[arg(long, global = true)]
    debug_file: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a session: one turn when a prompt is given, otherwise an interactive loop of turns.
    Run(Box<run::RunArgs>),
    /// Manage extensions.
    #[command(subcommand)]
    Ext(ext::ExtCommand),
    /// Which projects' `.stud/` folders are read.
    #[command(subcommand)]
    Trust(trust::TrustCommand),
    /// MCP servers: list, add, remove, trust, revoke.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Show settings.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Kept sessions: list, show, rewind, replay, delete.
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// The authority stack's decisions across kept sessions, filtered by tool, mode, decision, layer, day.
    Audit(audit::AuditArgs),
    /// Subagents the `task` tool can start: list.
    #[command(subcommand)]
    Agents(agents::AgentsCommand),
    /// Agent Skills the `skill` tool can load: list.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Serve an editor over the Agent Client Protocol (JSON-RPC on stdio).
    Acp,
}

pub fn run() -> anyhow::Result<ExitCode> {
    let (args, debug, debug_file) = take_debug_flags(std::env::args_os().collect());
    let cli = Cli::parse_from(args);
    diagnostics(
        debug.as_deref().or(cli.debug.as_deref()),
        debug_file || cli.debug_file,
    )?;
    match cli.command {
        None => run::run(cli.run),
        Some(command) => dispatch(command),
    }
}

/// Where a listing command looks: the stud home, the working folder and
/// the project scope recorded for it (never asked: a listing only reads).
fn here() -> anyhow::Result<(
    crate::paths::StudHome,
    std::path::PathBuf,
    crate::extensions::ProjectScope,
)> {
    use anyhow::Context as _;
    let home = crate::paths::StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let scope = crate::extensions::trust::recorded_scope(home.root(), &cwd);
    Ok((home, cwd, scope))
}

/// A listing's exit: 1 when something was left out.
fn listed(problems: &[String]) -> ExitCode {
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Ext(cmd) => ext::run(cmd),
        Command::Run(args) => run::run(*args),
        Command::Trust(cmd) => trust::run(cmd),
        Command::Mcp(cmd) => mcp::run(cmd),
        Command::Config(cmd) => config::run(cmd),
        Command::Session(cmd) => session::run(cmd),
        Command::Audit(args) => audit::run(args),
        Command::Agents(cmd) => agents::run(cmd),
        Command::Skills(cmd) => skills::run(cmd),
        Command::Acp => crate::acp::run(),
    }
}

/// Install the `tracing` subscriber when the user asked for diagnostics.
fn diagnostics(debug: Option<&str>, to_file: bool) -> anyhow::Result<()> {
    use crate::diagnostics::{DEFAULT_FILTER, Sink, install, log_file, requested};
    let debug = debug.or(to_file.then_some(DEFAULT_FILTER));
    let Some(filter) = requested(debug)? else {
        return Ok(());
    };
    let sink = if to_file {
        Sink::File(log_file(crate::paths::StudHome::resolve()?.root()))
    } else {
        Sink::Stderr
    };
    install(filter, &sink)?;
    Ok(())
}

/// `--debug[=FILTER]` and `--debug-file` taken out of the command line
/// (before any `--`), so they work in front of a subcommand too: there
/// clap would read them as the run's own arguments and `ext` as a prompt.
fn take_debug_flags(
    args: Vec<std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Option<String>, bool) {
    let (mut rest, mut debug, mut to_file, mut literal) = (Vec::new(), None, false, false);
    for (i, arg) in args.into_iter().enumerate() {
        let text = arg.to_str().unwrap_or_default();
        match text {
            _ if i == 0 || literal => {}
            "--" => literal = true,
            "--debug" => {
                debug = Some(crate::diagnostics::DEFAULT_FILTER.to_string());
                continue;
            }
            "--debug-file" => {
                to_file = true;
                continue;
            }
            _ => {
                if let Some(filter) = text.strip_prefix("--debug=") {
                    debug = Some(filter.to_string());
                    continue;
                }
            }
        }
        rest.push(arg);
    }
    (rest, debug, to_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<std::ffi::OsString> {
        list.iter().map(Into::into).collect()
    }

    #[test]
    fn debug_flags_are_taken_from_anywhere_before_a_double_dash() {
        let (rest, debug, file) = take_debug_flags(args(&["stud", "--debug", "ext", "list"]));
        assert_eq!(rest, args(&["stud", "ext", "list"]));
        assert_eq!((debug.as_deref(), file), (Some("stud=debug"), false));
        let (rest, debug, file) = take_debug_flags(args(&[
            "stud",
            "ext",
            "--debug=stud=trace",
            "list",
            "--debug-file",
        ]));
        assert_eq!(rest, args(&["stud", "ext", "list"]));
        assert_eq!((debug.as_deref(), file), (Some("stud=trace"), true));
        let (rest, debug, _) = take_debug_flags(args(&["stud", "-p", "--", "--debug"]));
        assert_eq!(rest, args(&["stud", "-p", "--", "--debug"]));
        assert!(debug.is_none());
    }
}
