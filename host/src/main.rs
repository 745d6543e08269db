//! The `stud` binary: parse the command line, run, map errors to exit codes.

use std::process::ExitCode;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod libm_calls;

fn main() -> ExitCode {
    match stud::cli::run() {
        Ok(code) => code,
        Err(e) => {
            // The message may quote names and text from outside.
            let text = format!("error: {e:#}");
            eprintln!("{}", stud_protocol::terminal::safe(&text));
            ExitCode::from(1)
        }
    }
}
