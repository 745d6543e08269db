//! The driver of a full-screen UI. One task feeds the UI everything, in
//! order: bus events (`on-event`), terminal events (`on-input`, with a
//! tick when nothing happens so a spinner moves) and questions
//! (`on-interaction`, during which the UI reads keys itself). What the UI
//! answers to input becomes a [`Control`] for the session's loop.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use stud_protocol::events::KernelEvent;

use super::events::{Bus, Subscriber};
use super::input_history::InputHistory;
use super::interaction::Ask;
use crate::runtime::Extension;
use crate::runtime::domain::UiAction;
use crate::runtime::services::TermEvent;
use crate::tty::Screen;

/// How often an idle UI gets a `tick`.
pub const TICK: Duration = Duration::from_millis(100);

/// The most streamed text merged into one `provider.tokens` for the UI.
const MERGE_BYTES: usize = 64 * 1024;

/// What the person asked for through the full-screen UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// A prompt or a command line.
    Submit(String),
    /// Text for the running turn's next stage boundary.
    Steer(String),
    /// Stop the running turn.
    Interrupt,
    /// End the program.
    Quit,
}

pub struct Driver {
    pub sub: Arc<Subscriber>,
    pub ui: Arc<Extension>,
    pub screen: Arc<Screen>,
    pub controls: mpsc::UnboundedSender<Control>,
    pub asks: mpsc::UnboundedReceiver<Ask>,
    pub bus: Bus,
    /// Where what the person submits is kept for later sessions.
    pub history: InputHistory,
}

impl Driver {
    pub fn spawn(self) -> JoinHandle<()> {
        tokio::spawn(self.run())
    }

    async fn run(mut self) {
        // A UI starts believing the screen is blank (it draws only what
        // differs from that); after `/clear` or `/resume` the last
        // session's UI left its frame there. Make the belief true, in the
        // new UI's first frame (or at once if its start drew none).
        self.screen.clear_with_next_frame();
        if let Err(e) = self.ui.ui_screen_start(self.screen.size()).await {
            self.failed(&e.to_string());
        }
        self.screen.clear_if_pending();
        loop {
            // Typing overtakes the bus: a key waits for at most the one
            // call in progress, never for a queue of streamed tokens.
            while let Some(input) = self.screen.try_next_event() {
                self.input(input).await;
            }
            tokio::select! {
                // Events before questions: a question must not cover what
                // led to it (the tool call it is about).
                biased;
                ev = self.sub.next() => {
                    let Some(mut ev) = ev else { return };
                    self.sub.merge_queued_tokens(&mut ev, MERGE_BYTES);
                    if let Err(e) = self.ui.ui_on_event(&super::subscribers::wit_event(&ev)).await {
                        self.failed(&e.to_string());
                    }
                    self.sub.ack();
                }
                Some(ask) = self.asks.recv() => {
                    let answer = self.ui.ui_on_interaction(&ask.request).await;
                    let _ = ask.reply.send(answer);
                }
                input = self.screen.next_event(TICK) => {
                    self.input(input.unwrap_or(TermEvent::Tick)).await;
                }
            }
        }
    }

    async fn input(&self, input: TermEvent) {
        match self.ui.ui_screen_on_input(&input).await {
            Ok(actions) => {
                for a in actions {
                    if let UiAction::Submit(text) | UiAction::Steer(text) = &a {
                        self.history.append(text);
                    }
                    let _ = self.controls.send(control(a));
                }
            }
            Err(e) => self.failed(&e.to_string()),
        }
    }

    fn failed(&self, error: &str) {
        self.bus.publish(KernelEvent::SubscriberFailed {
            extension: self.ui.id().to_string(),
            error: error.to_string(),
        });
    }
}

fn control(a: UiAction) -> Control {
    match a {
        UiAction::Submit(t) => Control::Submit(t),
        UiAction::Steer(t) => Control::Steer(t),
        UiAction::Interrupt => Control::Interrupt,
        UiAction::Quit => Control::Quit,
    }
}
