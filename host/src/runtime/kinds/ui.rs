use super::{guest_call, infallible};
use crate::runtime::bindings::stud::extension::interaction::{
    InteractionRequest, InteractionResponse,
};
use crate::runtime::bindings::stud::extension::types::Event;
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn ui_on_event(&self, event: &Event) -> Result<(), CallError> {
        let event = event.clone();
        guest_call!(self, Ui, "on-event", |g, store| infallible(
            g.call_on_event(store, &event).await
        ))
    }

    pub async fn ui_on_interaction(
        &self,
        request: &InteractionRequest,
    ) -> Result<InteractionResponse, CallError> {
        let request = request.clone();
        guest_call!(self, Ui, "on-interaction", |g, store| infallible(
            g.call_on_interaction(store, &request).await
        ))
    }

    pub async fn ui_dismiss(&self, correlation_id: &str) -> Result<(), CallError> {
        let correlation_id = correlation_id.to_string();
        guest_call!(self, Ui, "dismiss", |g, store| infallible(
            g.call_dismiss(store, &correlation_id).await
        ))
    }

    pub async fn ui_read_input(&self) -> Result<Option<String>, CallError> {
        guest_call!(self, Ui, "read-input", |g, store| infallible(
            g.call_read_input(store).await
        ))
    }
}
