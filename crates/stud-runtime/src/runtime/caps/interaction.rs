//! `interaction`: questions for the person, answered by the UI layer. Time
//! spent waiting for the answer does not count against the guest deadline.

use crate::runtime::contract::v0_1::stud::extension::interaction;
use crate::runtime::host_state::HostState;
use crate::runtime::services::ExtError;

impl interaction::Host for HostState {
    async fn request(
        &mut self,
        kind: interaction::InteractionKind,
    ) -> wasmtime::Result<Result<interaction::InteractionResponse, ExtError>> {
        let _paused = self.deadline.pause();
        let answer = self.ext.services.interact(&self.ext.id, kind).await;
        Ok(answer)
    }
}
