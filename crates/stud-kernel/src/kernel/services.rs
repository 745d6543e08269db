//! The kernel's side of the host imports: extension logs and events go on
//! the bus, questions go to the interaction broker, terminal output goes to
//! stdout (or stderr when stdout carries JSON).

use std::io::Write;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::events::Bus;
use super::input_history::InputHistory;
use super::interaction::{Answer, Interactions};
use crate::manifest::ExtensionId;
use crate::runtime::host_state::ExtensionContext;
use crate::runtime::services::{
    BoxFuture, Cell, ErrorClass, ExtError, InteractionKind, InteractionResponse, LogLevel,
    ScreenSize, Services, SessionRequest, TermEvent, ext_error, read_line,
};
use stud_protocol::events::{KernelEvent, Level};

/// Where UI extensions' terminal output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalOut {
    Stdout,
    /// stdout carries JSON, so people's text goes to stderr.
    Stderr,
    /// Benchmarks.
    Discard,
}

pub struct KernelServices {
    pub bus: Bus,
    /// The command being dispatched reaches the session through this.
    pub commands: Arc<super::commands::Bridge>,
    /// The terminal a full-screen UI draws on, in a screen session.
    screen: OnceLock<Arc<crate::tty::Screen>>,
    interactions: OnceLock<Arc<Interactions>>,
    terminal: TerminalOut,
    /// Other UIs' output while a question is open.
    pub held: super::held_output::HeldOutput,
    /// The project a full-screen UI completes paths in, and its history.
    project: OnceLock<(std::path::PathBuf, InputHistory)>,
}

impl KernelServices {
    pub fn new(bus: Bus, terminal: TerminalOut) -> Self {
        KernelServices {
            bus,
            commands: Arc::default(),
            screen: OnceLock::new(),
            interactions: OnceLock::new(),
            terminal,
            held: super::held_output::HeldOutput::new(move |text| write_out(terminal, text)),
            project: OnceLock::new(),
        }
    }

    /// A sequence the host itself sends the person's terminal (a
    /// notification, the clipboard): through the screen between frames,
    /// else to the terminal the session's text goes to, if it is one.
    pub fn signal(&self, sequence: &str) {
        if let Some(s) = self.screen.get() {
            s.signal(sequence);
            return;
        }
        use std::io::IsTerminal;
        let tty = match self.terminal {
            TerminalOut::Stdout => std::io::stdout().is_terminal(),
            TerminalOut::Stderr => std::io::stderr().is_terminal(),
            TerminalOut::Discard => false,
        };
        if tty {
            write_out(self.terminal, sequence);
        }
    }

    /// The project the person works in, for `@` completion and history.
    pub fn set_project(&self, root: std::path::PathBuf, history: InputHistory) {
        let _ = self.project.set((root, history));
    }

    /// Give the full-screen UI its terminal.
    pub fn set_screen(&self, screen: Arc<crate::tty::Screen>) {
        let _ = self.screen.set(screen);
    }

    /// Connect the interaction broker once the UIs are loaded.
    pub fn set_interactions(&self, interactions: Arc<Interactions>) {
        let _ = self.interactions.set(interactions);
    }
}

fn level_word(level: LogLevel) -> Level {
    match level {
        LogLevel::Trace => Level::Trace,
        LogLevel::Debug => Level::Debug,
        LogLevel::Info => Level::Info,
        LogLevel::Warn => Level::Warn,
        LogLevel::Error => Level::Error,
    }
}

impl Services for KernelServices {
    fn log(&self, ext: &ExtensionId, level: LogLevel, message: &str) {
        self.bus.publish(KernelEvent::ExtensionLog {
            extension: ext.to_string(),
            level: level_word(level),
            message: message.into(),
        });
        if matches!(level, LogLevel::Warn | LogLevel::Error) {
            self.bus.publish(KernelEvent::Diagnostic {
                level: level_word(level),
                message: format!("{ext}: {message}"),
            });
        }
    }

    fn emit(&self, _ext: &ExtensionId, name: &str, payload: &str) {
        let payload: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
        self.bus.publish_named(name, payload);
    }

    fn kernel_event(&self, event: KernelEvent) {
        self.bus.publish(event);
    }

    fn interact(
        &self,
        ext: &ExtensionId,
        kind: InteractionKind,
    ) -> BoxFuture<'static, Result<InteractionResponse, ExtError>> {
        let interactions = self.interactions.get().cloned();
        let ext = ext.clone();
        Box::pin(async move {
            let Some(interactions) = interactions else {
                return Err(ext_error(
                    ErrorClass::Session,
                    "no-interactor",
                    format!("`{ext}` asked a question before the UI was ready"),
                ));
            };
            match interactions.request(kind).await {
                Answer::Response(r) => Ok(r),
                Answer::Halt => Err(ext_error(
                    ErrorClass::Session,
                    "headless",
                    "this is a headless run: nobody can answer questions; proceed without asking"
                        .to_string(),
                )),
            }
        })
    }

    fn session(
        &self,
        ext: &ExtensionId,
        request: SessionRequest,
    ) -> BoxFuture<'static, Result<String, ExtError>> {
        self.commands.send(ext, request)
    }

    fn is_interactor(&self, ext: &ExtensionContext) -> bool {
        self.interactions
            .get()
            .and_then(|i| i.interactor())
            .is_some_and(|ui| ui.is_context(ext))
    }

    fn terminal_write(&self, text: &str) {
        write_out(self.terminal, text);
    }

    fn terminal_write_from(&self, ext: &ExtensionContext, text: &str) {
        if self.is_interactor(ext) || !self.held.keep(text) {
            write_out(self.terminal, text);
        }
    }

    fn screen_size(&self) -> ScreenSize {
        match self.screen.get() {
            Some(s) => s.size(),
            None => ScreenSize { cols: 80, rows: 24 },
        }
    }

    fn screen_draw(&self, cells: Vec<Cell>) {
        if let Some(s) = self.screen.get() {
            s.draw(&cells);
        }
    }

    fn screen_cursor(&self, at: Option<(u16, u16)>) {
        if let Some(s) = self.screen.get() {
            s.cursor(at);
        }
    }

    fn screen_clear(&self) {
        if let Some(s) = self.screen.get() {
            s.clear();
        }
    }

    fn screen_read_event(
        &self,
        timeout: std::time::Duration,
    ) -> BoxFuture<'static, Option<TermEvent>> {
        let screen = self.screen.get().cloned();
        Box::pin(async move {
            match screen {
                Some(s) => s.next_event(timeout).await,
                None => None,
            }
        })
    }

    fn terminal_read_line(&self, prompt: String) -> BoxFuture<'static, Option<String>> {
        read_line(prompt, self.terminal != TerminalOut::Stdout)
    }

    fn complete_path(&self, prefix: &str, limit: usize) -> Vec<String> {
        match self.project.get() {
            Some((root, _)) => super::path_completion::complete(root, prefix, limit),
            None => Vec::new(),
        }
    }

    fn input_history(&self) -> Vec<String> {
        self.project
            .get()
            .map(|(_, h)| h.load())
            .unwrap_or_default()
    }

    fn edit_text(&self, text: String) -> BoxFuture<'static, Result<String, String>> {
        let screen = self.screen.get().cloned();
        Box::pin(async move {
            match screen {
                Some(s) => s.edit_text(text).await,
                None => Err("no full-screen terminal to open an editor on".into()),
            }
        })
    }
}

fn write_out(terminal: TerminalOut, text: &str) {
    match terminal {
        TerminalOut::Stderr => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
        TerminalOut::Stdout => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        TerminalOut::Discard => {}
    }
}
