//! Where the time goes: `tracing` spans for start-up phases, sessions,
//! turns, stages, hooks and extension calls (each with the extension id),
//! printed with their durations when the user asks (`--debug[=FILTER]` or
//! `RUST_LOG`), to stderr or to a file in the stud home, never to stdout.
//! Off by default: with no subscriber installed a span costs one relaxed
//! atomic load.

use std::path::{Path, PathBuf};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// `--debug` without a filter: stud's own spans and events, at debug.
pub const DEFAULT_FILTER: &str = "stud=debug";

#[derive(Debug, thiserror::Error)]
pub enum DiagnosticsError {
    #[error(
        "--debug={filter}: not a filter ({reason}); write targets and levels like `stud=debug` or `stud=trace,wasmtime=info`"
    )]
    BadFilter { filter: String, reason: String },
    #[error("RUST_LOG={filter}: not a filter ({reason}); unset it or fix it")]
    BadEnv { filter: String, reason: String },
    #[error("cannot open the debug log {}: {source}", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where diagnostics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    Stderr,
    /// Appended to this file (`~/.stud/logs/debug.log`).
    File(PathBuf),
}

/// What the user asked for: `--debug[=FILTER]`, else `RUST_LOG`.
pub fn requested(debug: Option<&str>) -> Result<Option<EnvFilter>, DiagnosticsError> {
    if let Some(filter) = debug {
        return EnvFilter::try_new(filter)
            .map(Some)
            .map_err(|e| DiagnosticsError::BadFilter {
                filter: filter.to_string(),
                reason: e.to_string(),
            });
    }
    match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => {
            EnvFilter::try_new(&text)
                .map(Some)
                .map_err(|e| DiagnosticsError::BadEnv {
                    filter: text,
                    reason: e.to_string(),
                })
        }
        _ => Ok(None),
    }
}

/// The debug log in the stud home.
pub fn log_file(home: &Path) -> PathBuf {
    home.join("logs").join("debug.log")
}

/// Install the subscriber: spans print when they close, with their busy
/// and idle time, stamped with the time since start.
pub fn install(filter: EnvFilter, sink: &Sink) -> Result<(), DiagnosticsError> {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .with_thread_ids(true)
        .with_timer(tracing_subscriber::fmt::time::uptime())
        .with_ansi(false);
    // A second install (tests in one process) keeps the first.
    let _ = match sink {
        Sink::Stderr => builder.with_writer(std::io::stderr).try_init(),
        Sink::File(path) => {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| DiagnosticsError::File {
                    path: path.clone(),
                    source,
                })?;
            builder.with_writer(std::sync::Mutex::new(file)).try_init()
        }
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_filter_names_the_flag() {
        let e = requested(Some("stud=loud")).unwrap_err().to_string();
        assert!(e.starts_with("--debug=stud=loud"), "{e}");
        assert!(requested(Some(DEFAULT_FILTER)).unwrap().is_some());
    }
}
