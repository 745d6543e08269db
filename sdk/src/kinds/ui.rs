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

    /// The extension is being retired: a reload replaced it, or the
    /// session ended. Release what `init` took; `dispose` follows. Bounded
    /// by the call deadline; an error is logged, not shown.
    fn deactivate(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The last call before the instance is dropped (after `deactivate`).
    fn dispose(&mut self) {}

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

pub use crate::wit::stud::extension::terminal::{ScreenSize, TermEvent};

/// What a full-screen UI asks the session to do after an input event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiAction {
    /// Run this input (a prompt or a `/command`) now or after the turn.
    Submit(String),
    /// Give this text to the running turn at its next stage boundary.
    Steer(String),
    /// Stop the running turn.
    Interrupt,
    /// End the program.
    Quit,
}

/// A UI that takes over the terminal (contract 0.1.1). The host gives it
/// every terminal event through `on_input` and a `Tick` when idle; it never
/// blocks there. It draws with [`crate::host::terminal::draw`]. Register it
/// with [`export_tui!`](crate::export_tui).
pub trait Screen: Ui {
    /// The host gave this UI the screen.
    fn start(&mut self, size: ScreenSize);
    /// A key, paste, resize or tick while no question is open.
    fn on_input(&mut self, event: TermEvent) -> Vec<UiAction>;
}
