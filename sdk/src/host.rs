//! Host services as plain functions. Each works only if the extension's
//! world imports it and the user granted the capability behind it; an
//! ungranted capability is refused before the extension is instantiated.

use serde::{Serialize, de::DeserializeOwned};

use crate::Error;
use crate::wit::stud::extension as w;

/// Log a line into the host's log, tagged with this extension's id.
pub mod log {
    use super::w::log::{Level, log};

    /// Fine-grained detail, usually filtered out.
    pub fn trace(message: &str) {
        log(Level::Trace, message)
    }
    /// Detail useful when diagnosing a problem.
    pub fn debug(message: &str) {
        log(Level::Debug, message)
    }
    /// Normal operation worth recording.
    pub fn info(message: &str) {
        log(Level::Info, message)
    }
    /// Something unexpected that the extension recovered from.
    pub fn warn(message: &str) {
        log(Level::Warn, message)
    }
    /// A failure the user or developer should look at.
    pub fn error(message: &str) {
        log(Level::Error, message)
    }
}

/// Publish an observer event (the host names it `ext.<id>.<name>`).
pub fn emit<T: Serialize>(name: &str, payload: &T) -> Result<(), Error> {
    let json = serde_json::to_string(payload).map_err(|e| Error::internal(e.to_string()))?;
    w::events::emit(name, &json);
    Ok(())
}

/// Report progress of the tool call in progress (shown by UIs as
/// `tool.progress`); outside a tool call it is an `ext.<id>.progress` event.
pub fn progress(message: &str) -> Result<(), Error> {
    emit("progress", &serde_json::json!({"message": message}))
}

/// This extension's state slot; it survives traps and reloads.
pub mod state {
    use super::*;

    /// The last value written, or `None` if the slot is empty.
    pub fn read<T: DeserializeOwned>() -> Result<Option<T>, Error> {
        match w::state::read() {
            None => Ok(None),
            Some(json) => serde_json::from_str(&json)
                .map(Some)
                .map_err(|e| Error::internal(format!("state slot does not parse: {e}"))),
        }
    }

    /// Replace the slot's value, so it is there after a trap or reload.
    pub fn write<T: Serialize>(value: &T) -> Result<(), Error> {
        let json = serde_json::to_string(value).map_err(|e| Error::internal(e.to_string()))?;
        w::state::write(&json).map_err(Error::from)
    }
}

/// This extension's validated configuration.
pub fn config<T: DeserializeOwned>() -> Result<T, Error> {
    serde_json::from_str(&w::config::get())
        .map_err(|e| Error::validation("config-invalid", format!("config does not parse: {e}")))
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    w::clock::now_ms()
}

/// Monotonic nanoseconds, for measuring durations.
pub fn monotonic_ns() -> u64 {
    w::clock::monotonic_ns()
}

/// True once the kernel cancelled the current call; long loops should check
/// it and return early.
pub fn is_cancelled() -> bool {
    w::cancel::is_cancelled()
}

/// A secret the manifest declares (`capabilities.secrets`).
pub fn secret(name: &str) -> Result<String, Error> {
    w::secrets::get(name).map_err(Error::from)
}

/// Outbound HTTP through the host (needs `capabilities.network`).
pub mod http {
    pub use super::w::http::{Header, Request, Response};
    use super::*;

    /// Send a request; read the body with [`Response::next_chunk`].
    pub fn send(request: &Request) -> Result<Response, Error> {
        w::http::send(request).map_err(Error::from)
    }

    /// A GET with no headers, body read to the end.
    pub fn get(url: &str) -> Result<(u16, Vec<u8>), Error> {
        let response = send(&Request {
            method: "GET".into(),
            url: url.into(),
            headers: vec![],
            body: None,
            timeout_ms: None,
        })?;
        let mut body = Vec::new();
        while let Some(chunk) = response.next_chunk()? {
            body.extend_from_slice(&chunk);
        }
        Ok((response.status(), body))
    }
}

/// TCP, optionally TLS, to a granted host and port (contract 0.1.4; tools
/// and session stores with `capabilities.sockets`). The host resolves the
/// name, checks it against the grant and connects; an extension never sees
/// an address.
pub mod socket {
    pub use super::w::socket::Connection;
    use super::*;

    /// Open a connection to `host`:`port` (TLS, checked against the web's
    /// roots for `host`, when `tls`).
    pub fn connect(host: &str, port: u16, tls: bool) -> Result<Connection, Error> {
        w::socket::connect(host, port, tls).map_err(Error::from)
    }

    /// A connection as [`std::io::Read`] and [`std::io::Write`], for
    /// protocol crates that speak over a stream.
    pub struct Stream(pub Connection);

    impl std::io::Read for Stream {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let max = u32::try_from(buf.len()).unwrap_or(u32::MAX);
            let bytes = self
                .0
                .read(max)
                .map_err(|e| std::io::Error::other(Error::from(e).to_string()))?;
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            Ok(n)
        }
    }

    impl std::io::Write for Stream {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .write(buf)
                .map_err(|e| std::io::Error::other(Error::from(e).to_string()))?;
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

/// Run processes in the project (needs `capabilities.exec`).
pub mod process {
    pub use super::w::process::{Command, ProcessOutput, SpawnRequest};
    use super::*;

    /// Run a process and wait for its exit code and output.
    pub fn run(request: &SpawnRequest) -> Result<ProcessOutput, Error> {
        w::process::run(request).map_err(Error::from)
    }
}

/// Ask the person at the keyboard (tool and command kinds).
pub mod interaction {
    pub use super::w::interaction::{
        Approval, Choice, InteractionKind, InteractionResponse, InteractionStatus,
    };
    use super::*;

    /// Any interaction kind, for when the shorthands below do not fit.
    pub fn request(kind: &InteractionKind) -> Result<InteractionResponse, Error> {
        w::interaction::request(kind).map_err(Error::from)
    }

    /// Free text; `None` if the person declined or did not answer in time.
    pub fn ask(prompt: &str) -> Result<Option<String>, Error> {
        let r = request(&InteractionKind::Ask(prompt.to_string()))?;
        Ok(match r.status {
            InteractionStatus::Accepted => Some(r.value.unwrap_or_default()),
            _ => None,
        })
    }

    /// Yes or no; a timeout counts as no.
    pub fn confirm(prompt: &str) -> Result<bool, Error> {
        let r = request(&InteractionKind::Confirm(prompt.to_string()))?;
        Ok(r.status == InteractionStatus::Accepted)
    }

    /// One of `options`, or `None`.
    pub fn select(prompt: &str, options: &[&str]) -> Result<Option<String>, Error> {
        let r = request(&InteractionKind::Select(Choice {
            prompt: prompt.to_string(),
            options: options.iter().map(|o| o.to_string()).collect(),
        }))?;
        Ok(match r.status {
            InteractionStatus::Accepted => r.value,
            _ => None,
        })
    }
}

/// The user's terminal (ui kind only).
pub mod terminal {
    use super::w::terminal;

    /// Write text (no newline added). The host passes text, line breaks,
    /// tabs and SGR styling (`ESC [ ... m`) only: other escape sequences
    /// are dropped, `\r` and other controls are shown as escapes.
    pub fn write(text: &str) {
        terminal::write(text)
    }
    /// Read one line without its newline; `None` at end of input, and
    /// always for a UI that is not the session's interactor (only the UI
    /// that answers questions reads the person's input).
    pub fn read_line(prompt: &str) -> Option<String> {
        terminal::read_line(prompt)
    }
    /// Whether the output is an interactive terminal, to choose rich or plain output.
    pub fn is_terminal() -> bool {
        terminal::is_terminal()
    }

    pub use terminal::{Cell, Color, Key, KeyCode, KeyModifiers, Modifiers, ScreenSize, TermEvent};

    /// Full-screen UIs (contract 0.1.1): the screen's size now.
    pub fn size() -> ScreenSize {
        terminal::size()
    }
    /// Change these cells on the screen; the host renders them, shows any
    /// control character as `?` and drops bidirectional controls. Only the
    /// interactor draws; for another UI this does nothing.
    pub fn draw(cells: &[Cell]) {
        terminal::draw(cells)
    }
    /// Show the cursor at `(x, y)`, or hide it.
    pub fn set_cursor(at: Option<(u16, u16)>) {
        terminal::set_cursor(at)
    }
    /// Blank the screen.
    pub fn clear() {
        terminal::clear()
    }
    /// The next key, paste or resize within `timeout_ms` (for a UI
    /// answering a question inside `on_interaction`); always `None` for a
    /// UI that is not the interactor.
    pub fn read_event(timeout_ms: u32) -> Option<TermEvent> {
        terminal::read_event(timeout_ms)
    }
    /// `@` completion (contract 0.1.3): project entries in the folder
    /// `prefix` names that start with its last part (folders end in `/`),
    /// else files anywhere whose name contains a bare word; `.gitignore`
    /// respected, never outside the project. Empty for a non-interactor.
    pub fn complete_path(prefix: &str, limit: u32) -> Vec<String> {
        terminal::complete_path(prefix, limit)
    }
    /// What the person typed in this project, earlier sessions included,
    /// oldest first (contract 0.1.3). The host records what a full-screen
    /// UI submits or steers with.
    pub fn input_history() -> Vec<String> {
        terminal::input_history()
    }
    /// Let the person edit `text` in their own editor (contract 0.1.3);
    /// the screen is theirs meanwhile, so redraw everything after.
    pub fn edit_text(text: &str) -> Result<String, String> {
        terminal::edit_text(text)
    }
}

/// The running session, for command extensions (contract 0.1.1). Reads
/// are live; actions are applied by the kernel one at a time, with the
/// checks a person's own switch gets, and answer with a sentence saying
/// what was done (or an error saying why not).
pub mod session {
    use super::*;
    pub use crate::wit::stud::extension::session::{Action, NetworkChange, View};
    use stud_protocol::session_view::{NetworkPolicy, Overview, SessionList, TrustView};

    fn read<T: DeserializeOwned>(view: View) -> Result<T, Error> {
        let json = w::session::read(view)?;
        serde_json::from_str(&json)
            .map_err(|e| Error::internal(format!("the session view does not parse: {e}")))
    }

    /// Id, provider and model, mode, history size, usage and cost, tools,
    /// extensions with their health, commands.
    pub fn overview() -> Result<Overview, Error> {
        read(View::Overview)
    }

    /// Saved sessions of this project, newest first.
    pub fn sessions() -> Result<SessionList, Error> {
        read(View::Sessions)
    }

    /// Hosts granted to each extension that uses the network.
    pub fn network_policy() -> Result<NetworkPolicy, Error> {
        read(View::NetworkPolicy)
    }

    /// Whether this folder's `.stud/` is trusted.
    pub fn trust() -> Result<TrustView, Error> {
        read(View::Trust)
    }

    /// Ask the kernel to act; the answer says what was done.
    pub fn act(action: &Action) -> Result<String, Error> {
        Ok(w::session::act(action)?)
    }
}
