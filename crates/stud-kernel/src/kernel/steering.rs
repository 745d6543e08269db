//! Text a person typed for the running turn (the steering key): queued by
//! the UI, taken at the turn's next stage boundary before a request is
//! composed, appended as a user message and marked with `turn.steered`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Steering(Arc<Mutex<VecDeque<String>>>);

impl Steering {
    pub fn push(&self, text: String) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(text);
    }

    /// Everything queued, oldest first.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect()
    }
}
