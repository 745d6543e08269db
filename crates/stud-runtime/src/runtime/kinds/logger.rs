use super::guest_call;
use crate::runtime::contract::v0_1::stud::extension::types::Event;
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn logger_sink(&self, event: &Event) -> Result<(), CallError> {
        let event = event.clone();
        guest_call!(self, Logger, "sink", |g, store| g
            .call_sink(store, &event)
            .await)
    }

    pub async fn logger_flush(&self) -> Result<(), CallError> {
        guest_call!(self, Logger, "flush", |g, store| g.call_flush(store).await)
    }
}
