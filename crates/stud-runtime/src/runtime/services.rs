//! What the rest of stud provides to extensions through host imports:
//! the log, the event bus, interaction, secrets and the terminal. The
//! kernel supplies its own implementation; [`StderrServices`] serves the
//! CLI commands that run extensions outside a session.

use std::future::Future;
use std::pin::Pin;

use super::host_state::ExtensionContext;
use crate::manifest::ExtensionId;
use stud_protocol::events::KernelEvent;

pub use super::contract::v0_1::stud::extension::interaction::{
    InteractionKind, InteractionResponse,
};
pub use super::contract::v0_1::stud::extension::log::Level as LogLevel;
pub use super::contract::v0_1::stud::extension::session::{
    Action as SessionAction, View as SessionView,
};
pub use super::contract::v0_1::stud::extension::terminal::{Cell, ScreenSize, TermEvent};
pub use super::contract::v0_1::stud::extension::types::{ErrorClass, ExtError};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub trait Services: Send + Sync + 'static {
    /// A log line from an extension.
    fn log(&self, ext: &ExtensionId, level: LogLevel, message: &str);

    /// An observer event from an extension; `name` is already prefixed
    /// with `ext.<id>.`.
    fn emit(&self, ext: &ExtensionId, name: &str, payload: &str);

    /// A kernel event the runtime raises on an extension's behalf (a
    /// tool's progress, suppressed events). The default drops it, as
    /// `emit` outside a session does.
    fn kernel_event(&self, event: KernelEvent) {
        let _ = event;
    }

    /// Ask the person. The default has no interactor (headless).
    fn interact(
        &self,
        ext: &ExtensionId,
        kind: InteractionKind,
    ) -> BoxFuture<'static, Result<InteractionResponse, ExtError>> {
        let message = format!(
            "extension `{ext}` asked a question, but no interactive UI is attached (headless run); answer in the prompt instead"
        );
        let _ = kind;
        Box::pin(async move { Err(ext_error(ErrorClass::Session, "no-interactor", message)) })
    }

    /// A command's read of the session or request for a kernel action.
    /// The default has no session (commands run only inside one).
    fn session(
        &self,
        ext: &ExtensionId,
        request: SessionRequest,
    ) -> BoxFuture<'static, Result<String, ExtError>> {
        let _ = request;
        let message = format!("extension `{ext}` asked for the session, but none is running");
        Box::pin(async move { Err(ext_error(ErrorClass::Session, "no-session", message)) })
    }

    /// Resolve a secret by name (already checked against the manifest).
    fn secret(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    /// Whether `ext` is the session's interactor: the one UI that reads
    /// the person's input (lines, keys) and draws the full screen. Any
    /// other UI only writes. Outside a session none is.
    fn is_interactor(&self, ext: &ExtensionContext) -> bool {
        let _ = ext;
        false
    }

    /// Write to the user's terminal (UI extensions only; the text was
    /// filtered to text and styling by the `terminal` import).
    fn terminal_write(&self, text: &str) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// What a UI writes: the kernel holds back what a UI other than the
    /// interactor writes while the interactor waits for an answer.
    fn terminal_write_from(&self, ext: &ExtensionContext, text: &str) {
        let _ = ext;
        self.terminal_write(text);
    }

    /// Read one line from the terminal; `None` at end of input.
    fn terminal_read_line(&self, prompt: String) -> BoxFuture<'static, Option<String>> {
        read_line(prompt, false)
    }

    fn terminal_is_terminal(&self) -> bool {
        use std::io::IsTerminal;
        std::io::stdin().is_terminal()
    }

    /// The screen's size (a full-screen UI draws to it).
    fn screen_size(&self) -> ScreenSize {
        ScreenSize { cols: 80, rows: 24 }
    }

    /// Draw cells; without a screen (a line session) nothing is drawn.
    fn screen_draw(&self, cells: Vec<Cell>) {
        let _ = cells;
    }

    fn screen_cursor(&self, at: Option<(u16, u16)>) {
        let _ = at;
    }

    fn screen_clear(&self) {}

    /// The next terminal event within `timeout`; none without a screen.
    fn screen_read_event(
        &self,
        timeout: std::time::Duration,
    ) -> BoxFuture<'static, Option<TermEvent>> {
        let _ = timeout;
        Box::pin(async { None })
    }

    /// Project paths for `@` completion (see `terminal.complete-path`);
    /// none outside a session with a project.
    fn complete_path(&self, prefix: &str, limit: usize) -> Vec<String> {
        let _ = (prefix, limit);
        Vec::new()
    }

    /// What the person typed in this project, oldest first.
    fn input_history(&self) -> Vec<String> {
        Vec::new()
    }

    /// The person edits `text` in their editor while the screen is theirs.
    fn edit_text(&self, text: String) -> BoxFuture<'static, Result<String, String>> {
        let _ = text;
        Box::pin(async { Err("no terminal to open an editor on".to_string()) })
    }
}

/// What a command asks of the session through the `session` import.
#[derive(Debug, Clone)]
pub enum SessionRequest {
    Read(SessionView),
    Act(SessionAction),
}

/// Show `prompt` (on stdout, or stderr when stdout carries JSON) and read
/// one line from stdin on a blocking thread; `None` at end of input.
pub fn read_line(prompt: String, prompt_to_stderr: bool) -> BoxFuture<'static, Option<String>> {
    Box::pin(async move {
        tokio::task::spawn_blocking(move || {
            use std::io::{BufRead, Write};
            if prompt_to_stderr {
                let _ = write!(std::io::stderr(), "{prompt}");
            } else {
                let mut out = std::io::stdout();
                let _ = write!(out, "{prompt}");
                let _ = out.flush();
            }
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
            }
        })
        .await
        .ok()
        .flatten()
    })
}

/// Logs warnings and errors to stderr; drops events.
pub struct StderrServices;

impl Services for StderrServices {
    fn log(&self, ext: &ExtensionId, level: LogLevel, message: &str) {
        if matches!(level, LogLevel::Warn | LogLevel::Error)
            || std::env::var_os("STUD_DEBUG").is_some()
        {
            eprintln!("[{ext}] {level:?}: {message}");
        }
    }

    fn emit(&self, _ext: &ExtensionId, _name: &str, _payload: &str) {}
}

pub fn ext_error(class: ErrorClass, code: &str, message: impl Into<String>) -> ExtError {
    ExtError {
        class,
        code: code.into(),
        message: message.into(),
        context: None,
    }
}
