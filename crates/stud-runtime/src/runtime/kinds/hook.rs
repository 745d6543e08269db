use super::guest_call;
use crate::runtime::contract::v0_1::stud::extension::hook_types::HookOutcome;
use crate::runtime::contract::v0_1::stud::extension::types::HookSlot;
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn hook_run(&self, slot: HookSlot, payload: &str) -> Result<HookOutcome, CallError> {
        let payload = payload.to_string();
        guest_call!(self, Hook, "run", |g, store| g
            .call_run(store, slot, &payload)
            .await)
    }
}
