//! `terminal`: the user's terminal, for UI extensions. Waiting for a line
//! or for the person's editor does not count against the guest deadline.
//!
//! Every UI may write, but only text and SGR styling reach the terminal
//! ([`crate::runtime::styled_text::styled_only`]): no escape sequence that moves the
//! cursor, erases, sets the clipboard or the title, and no `\r` to draw
//! over a line. Only the session's interactor (the UI the user chose to
//! answer questions) reads the person's input and draws the full screen:
//! `read-line` and `read-event` from any other UI return `none` (as at the
//! end of input) and its `draw`, `set-cursor` and `clear` do nothing, with
//! a warning naming it. Otherwise a UI that only observes could take the
//! person's answer to a question, or paint a dialog of its own.

use crate::runtime::contract::v0_1::stud::extension::terminal;
use crate::runtime::host_state::HostState;
use crate::runtime::styled_text::styled_only;
use stud_protocol::events::KernelEvent;

impl HostState {
    /// Whether this extension is the interactor; if not, a warning (within
    /// its event budget) says what it tried.
    fn is_interactor(&self, what: &str) -> bool {
        if self.ext.services.is_interactor(&self.ext) {
            return true;
        }
        if self.ext.admit_emit() {
            self.ext.services.kernel_event(KernelEvent::Diagnostic {
                level: stud_protocol::events::Level::Warn,
                message: format!(
                    "UI extension `{}` called terminal `{what}`, which only the interactor (the UI that answers questions, `active.interactor`) may; it got nothing",
                    self.ext.id
                ),
            });
        }
        false
    }
}

impl terminal::Host for HostState {
    async fn write(&mut self, text: String) -> wasmtime::Result<()> {
        self.ext
            .services
            .terminal_write_from(&self.ext, &styled_only(&text));
        Ok(())
    }

    async fn read_line(&mut self, prompt: String) -> wasmtime::Result<Option<String>> {
        if !self.is_interactor("read-line") {
            return Ok(None);
        }
        let _paused = self.deadline.pause();
        let prompt = styled_only(&prompt).into_owned();
        let line = self.ext.services.terminal_read_line(prompt).await;
        Ok(line)
    }

    async fn is_terminal(&mut self) -> wasmtime::Result<bool> {
        Ok(self.ext.services.terminal_is_terminal())
    }

    async fn size(&mut self) -> wasmtime::Result<terminal::ScreenSize> {
        Ok(self.ext.services.screen_size())
    }

    async fn draw(&mut self, cells: Vec<terminal::Cell>) -> wasmtime::Result<()> {
        if self.is_interactor("draw") {
            self.ext.services.screen_draw(cells);
        }
        Ok(())
    }

    async fn set_cursor(&mut self, at: Option<(u16, u16)>) -> wasmtime::Result<()> {
        if self.is_interactor("set-cursor") {
            self.ext.services.screen_cursor(at);
        }
        Ok(())
    }

    async fn clear(&mut self) -> wasmtime::Result<()> {
        if self.is_interactor("clear") {
            self.ext.services.screen_clear();
        }
        Ok(())
    }

    async fn read_event(
        &mut self,
        timeout_ms: u32,
    ) -> wasmtime::Result<Option<terminal::TermEvent>> {
        if !self.is_interactor("read-event") {
            return Ok(None);
        }
        let _paused = self.deadline.pause();
        let timeout = std::time::Duration::from_millis(u64::from(timeout_ms.min(60_000)));
        Ok(self.ext.services.screen_read_event(timeout).await)
    }

    async fn complete_path(&mut self, prefix: String, limit: u32) -> wasmtime::Result<Vec<String>> {
        if !self.is_interactor("complete-path") {
            return Ok(Vec::new());
        }
        let _paused = self.deadline.pause();
        let limit = limit.min(200) as usize;
        Ok(self.ext.services.complete_path(&prefix, limit))
    }

    async fn input_history(&mut self) -> wasmtime::Result<Vec<String>> {
        if !self.is_interactor("input-history") {
            return Ok(Vec::new());
        }
        Ok(self.ext.services.input_history())
    }

    async fn edit_text(&mut self, text: String) -> wasmtime::Result<Result<String, String>> {
        if !self.is_interactor("edit-text") {
            return Ok(Err("only the interactor may open the editor".into()));
        }
        // The person takes as long as they like.
        let _paused = self.deadline.pause();
        Ok(self.ext.services.edit_text(text).await)
    }
}
