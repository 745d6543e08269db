//! Command-line interface. Exit codes: 0 success, 1 failure, 2 usage error.

mod config;
mod ext;
mod run;
mod session;
mod trust;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "stud",
    version,
    about = "An agent CLI whose extensions are sandboxed WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a session: one turn with a prompt, a loop of turns without.
    Run(run::RunArgs),
    /// Manage extensions.
    #[command(subcommand)]
    Ext(ext::ExtCommand),
    /// Which projects' `.stud/` folders are read.
    #[command(subcommand)]
    Trust(trust::TrustCommand),
    /// Show settings.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Kept sessions: list, show, delete.
    #[command(subcommand)]
    Session(session::SessionCommand),
}

pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Ext(cmd) => ext::run(cmd),
        Command::Run(args) => run::run(args),
        Command::Trust(cmd) => trust::run(cmd),
        Command::Config(cmd) => config::run(cmd),
        Command::Session(cmd) => session::run(cmd),
    }
}
