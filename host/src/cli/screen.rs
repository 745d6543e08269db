//! The full-screen UI as a front end of the kernel's front door: input
//! arrives as [`Control`]s, also while a turn runs (a command runs beside
//! it, a prompt follows it, steering goes to it, Esc stops it); answers
//! reach the UI as events, never stdout. SIGTERM or SIGHUP end the session.

use stud_protocol::events::{KernelEvent, Level};
use tokio::sync::mpsc;

use super::signals::EndSignals;
use crate::kernel::commands::After;
use crate::kernel::front_door::{Answer, Flow, FrontEnd, SessionSwitch, Submission};
use crate::kernel::launch::LaunchError;
use crate::kernel::persist::ResumeTarget;
use crate::kernel::screen_ui::Control;
use crate::kernel::shell_input::ShellRun;
use crate::kernel::{Bus, LaunchOptions, Launched, launch};

pub struct Screen<'a> {
    pub controls: mpsc::UnboundedReceiver<Control>,
    pub signals: EndSignals,
    /// The signal that ended the session, for the exit status (128 + n).
    pub ended_by: Option<i32>,
    pub options: &'a dyn Fn(Option<ResumeTarget>) -> LaunchOptions,
    /// The answer of a command that switches sessions (`/clear`,
    /// `/resume`): shown again in the next session, whose UI starts on a
    /// clean screen.
    pub carried: Option<String>,
}

/// A message for the person, in the UI.
pub fn notify(bus: &Bus, level: Level, message: String) {
    bus.publish(KernelEvent::Diagnostic { level, message })
}

fn submission(control: Option<Control>) -> Submission {
    match control {
        Some(Control::Submit(text)) => Submission::line(text),
        Some(Control::Steer(text)) => Submission::Steer(text),
        Some(Control::Interrupt) => Submission::Interrupt,
        Some(Control::Quit) | None => Submission::Quit,
    }
}

impl FrontEnd for Screen<'_> {
    async fn next(&mut self, _launched: &Launched) -> Option<Submission> {
        tokio::select! {
            c = self.controls.recv() => Some(submission(c)),
            n = self.signals.recv() => {
                self.ended_by = Some(n);
                Some(Submission::Quit)
            }
        }
    }

    async fn during_turn(&mut self) -> Option<Submission> {
        tokio::select! {
            c = self.controls.recv() => Some(submission(c)),
            n = self.signals.recv(), if self.ended_by.is_none() => {
                self.ended_by = Some(n);
                Some(Submission::Quit)
            }
        }
    }

    async fn answered(&mut self, launched: &Launched, answer: Answer) -> Flow {
        match answer {
            Answer::Refused(why) => notify(&launched.bus, Level::Error, why.message().to_string()),
            // Both reached the UI as events while they ran; a switching
            // command's answer is shown again in the next session.
            Answer::Command { done, .. } => {
                self.carried = (done.after != After::Continue).then_some(done.text);
            }
            // The call showed as a tool entry; this is its output in full.
            Answer::Shell { command, run } => match run {
                ShellRun::Ran { output, ok } => notify(
                    &launched.bus,
                    if ok { Level::Info } else { Level::Warn },
                    format!("!{command}\n{}", output.trim_end()),
                ),
                ShellRun::NotRun(why) => notify(
                    &launched.bus,
                    Level::Error,
                    format!("!{command} did not run: {why}"),
                ),
            },
            Answer::Said(Ok(text)) => notify(&launched.bus, Level::Info, text),
            Answer::Said(Err(why)) => notify(&launched.bus, Level::Error, why),
            Answer::Turn(_) if launched.session.budget_spent() => return Flow::Stop,
            Answer::Turn(_) => {}
        }
        Flow::Continue
    }

    async fn switch(
        &mut self,
        mut launched: Launched,
        to: SessionSwitch,
    ) -> Result<Launched, LaunchError> {
        launched.shutdown().await;
        drop(launched);
        let mut next = launch((self.options)(to.target())).await?;
        // The same options start the same UI; without one, input ends.
        self.controls = next
            .controls
            .take()
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        if let Some(text) = self.carried.take() {
            notify(&next.bus, Level::Info, text.trim_end().to_string());
        }
        for w in &next.warnings {
            notify(&next.bus, Level::Warn, w.clone());
        }
        Ok(next)
    }
}
