//! The `stud` binary: parse the command line, run, map errors to exit codes.

use std::process::ExitCode;

fn main() -> ExitCode {
    match stud::cli::run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
