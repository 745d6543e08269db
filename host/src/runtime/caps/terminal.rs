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
}
