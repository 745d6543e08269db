//! `session` (since 0.1.1): a command reads the running session and asks
//! the kernel for actions. The kernel applies them; time spent there (a
//! compaction calls the model) does not count against the guest deadline.

use crate::runtime::contract::v0_1::stud::extension::session;
use crate::runtime::host_state::HostState;
use crate::runtime::services::{ExtError, SessionRequest};

impl session::Host for HostState {
    async fn read(&mut self, what: session::View) -> wasmtime::Result<Result<String, ExtError>> {
        let _paused = self.deadline.pause();
        Ok(self
            .ext
            .services
            .session(&self.ext.id, SessionRequest::Read(what))
            .await)
    }

    async fn act(&mut self, action: session::Action) -> wasmtime::Result<Result<String, ExtError>> {
        let _paused = self.deadline.pause();
        Ok(self
            .ext
            .services
            .session(&self.ext.id, SessionRequest::Act(action))
            .await)
    }
}
