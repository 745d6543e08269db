//! `terminal`: the user's terminal, for UI extensions. Waiting for a line
//! does not count against the guest deadline.

use crate::runtime::bindings::stud::extension::terminal;
use crate::runtime::host_state::HostState;

impl terminal::Host for HostState {
    async fn write(&mut self, text: String) -> wasmtime::Result<()> {
        self.ext.services.terminal_write(&text);
        Ok(())
    }

    async fn read_line(&mut self, prompt: String) -> wasmtime::Result<Option<String>> {
        let _paused = self.deadline.pause();
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
        self.ext.services.screen_draw(cells);
        Ok(())
    }

    async fn set_cursor(&mut self, at: Option<(u16, u16)>) -> wasmtime::Result<()> {
        self.ext.services.screen_cursor(at);
        Ok(())
    }

    async fn clear(&mut self) -> wasmtime::Result<()> {
        self.ext.services.screen_clear();
        Ok(())
    }

    async fn read_event(
        &mut self,
        timeout_ms: u32,
    ) -> wasmtime::Result<Option<terminal::TermEvent>> {
        let _paused = self.deadline.pause();
        let timeout = std::time::Duration::from_millis(u64::from(timeout_ms.min(60_000)));
        Ok(self.ext.services.screen_read_event(timeout).await)
    }
}
