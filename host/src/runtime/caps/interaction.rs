//! `interaction`: questions for the person, answered by the UI layer. Time
//! spent waiting for the answer does not count against the guest deadline.

use std::time::Instant;

use crate::runtime::bindings::stud::extension::interaction;
use crate::runtime::host_state::HostState;
use crate::runtime::services::ExtError;

impl interaction::Host for HostState {
    async fn request(
        &mut self,
        kind: interaction::InteractionKind,
    ) -> wasmtime::Result<Result<interaction::InteractionResponse, ExtError>> {
        let started = Instant::now();
        let answer = self.ext.services.interact(&self.ext.id, kind).await;
        self.deadline.extend(started.elapsed());
        Ok(answer)
    }
}
