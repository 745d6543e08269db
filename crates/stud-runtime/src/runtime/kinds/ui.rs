use super::{guest_call, infallible};
use crate::runtime::contract::v0_1::exports::stud::extension::ui_screen::UiAction;
use crate::runtime::contract::v0_1::stud::extension::interaction::{
    InteractionRequest, InteractionResponse,
};
use crate::runtime::contract::v0_1::stud::extension::terminal::{ScreenSize, TermEvent};
use crate::runtime::contract::v0_1::stud::extension::types::Event;
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;
use crate::runtime::services::{ErrorClass, ext_error};

impl Extension {
    pub async fn ui_on_event(&self, event: &Event) -> Result<(), CallError> {
        let event = event.clone();
        guest_call!(self, Ui, "on-event", |g, store| infallible(
            g.api.call_on_event(store, &event).await
        ))
    }

    pub async fn ui_on_interaction(
        &self,
        request: &InteractionRequest,
    ) -> Result<InteractionResponse, CallError> {
        let request = request.clone();
        guest_call!(self, Ui, "on-interaction", |g, store| infallible(
            g.api.call_on_interaction(store, &request).await
        ))
    }

    pub async fn ui_dismiss(&self, correlation_id: &str) -> Result<(), CallError> {
        let correlation_id = correlation_id.to_string();
        guest_call!(self, Ui, "dismiss", |g, store| infallible(
            g.api.call_dismiss(store, &correlation_id).await
        ))
    }

    pub async fn ui_read_input(&self) -> Result<Option<String>, CallError> {
        guest_call!(self, Ui, "read-input", |g, store| infallible(
            g.api.call_read_input(store).await
        ))
    }

    /// Whether this UI can take over the terminal (exports `ui-screen`).
    pub fn ui_has_screen(&self) -> bool {
        self.info()
            .is_some_and(|i| i.exports_interface("ui-screen"))
    }

    pub async fn ui_screen_start(&self, size: ScreenSize) -> Result<(), CallError> {
        guest_call!(self, Ui, "start", |g, store| match &g.screen {
            Some(s) => s.call_start(store, size).await.map(Ok),
            None => Ok(Err(no_screen())),
        })
    }

    pub async fn ui_screen_on_input(&self, event: &TermEvent) -> Result<Vec<UiAction>, CallError> {
        let event = event.clone();
        guest_call!(self, Ui, "on-input", |g, store| match &g.screen {
            Some(s) => s.call_on_input(store, &event).await.map(Ok),
            None => Ok(Err(no_screen())),
        })
    }
}

fn no_screen() -> crate::runtime::services::ExtError {
    ext_error(
        ErrorClass::ExtensionHost,
        "no-screen",
        "this UI does not export ui-screen (it is a line UI)",
    )
}
