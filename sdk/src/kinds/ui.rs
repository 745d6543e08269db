//! UIs: show events to a person and answer interaction requests.

use serde_json::Value;

use crate::Error;
use crate::wit::stud::extension::interaction::{
    InteractionRequest, InteractionResponse, InteractionStatus,
};
use crate::wit::stud::extension::types::Event;

/// A UI. Every method has a default, so a pure subscriber implements only
/// `on_event`, and an interactor adds `on_interaction`.
pub trait Ui: Default + 'static {
    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// Projection only: must not block.
    fn on_event(&mut self, _event: Event) {}

    /// Answer a request. Default: reject (this UI is not an interactor).
    fn on_interaction(&mut self, request: InteractionRequest) -> InteractionResponse {
        InteractionResponse {
            correlation_id: request.correlation_id,
            status: InteractionStatus::Rejected,
            value: None,
        }
    }

    /// Another interactor answered `correlation_id` first.
    fn dismiss(&mut self, _correlation_id: String) {}

    /// The next user input; `None` ends the session. Default: none.
    fn read_input(&mut self) -> Option<String> {
        None
    }
}
