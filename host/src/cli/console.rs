//! The line console as a front end of the kernel's front door: input from
//! the argument, stdin (`-p`) or the interactor UI between turns; answers
//! on stdout and stderr; Ctrl-C stops the running turn.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::kernel::commands::{Dispatched, Status};
use crate::kernel::front_door::{Answer, Flow, FrontEnd, SessionSwitch, Submission};
use crate::kernel::launch::LaunchError;
use crate::kernel::persist::ResumeTarget;
use crate::kernel::shell_input::ShellRun;
use crate::kernel::{LaunchOptions, Launched, TurnOutcome, launch};

/// Where the console's input and output go, and what it remembers for the
/// exit status.
pub struct Console<'a> {
    /// The prompt of `stud "PROMPT"` or of `-p`, taken by the first read.
    pub first: Option<String>,
    /// No interactor: nothing is read after `first`.
    pub headless: bool,
    /// One input, then the session ends.
    pub one_shot: bool,
    /// The options a session switch starts the next session with.
    pub options: &'a dyn Fn(Option<ResumeTarget>) -> LaunchOptions,
    /// The running turn's token, for Ctrl-C.
    pub current: Arc<Mutex<CancellationToken>>,
    /// Events as JSON lines on stdout (`--output-format stream-json`).
    pub stdout_sub: Option<JoinHandle<()>>,
    pub stream_json: bool,
    /// The last turn's outcome: the exit status and the result object.
    pub last: Option<TurnOutcome>,
    /// The last command failed (exit status 1 when no turn ran).
    pub command_failed: bool,
}

impl FrontEnd for Console<'_> {
    async fn next(&mut self, launched: &Launched) -> Option<Submission> {
        if let Some(text) = self.first.take() {
            return Some(Submission::line(text));
        }
        if self.headless {
            return None;
        }
        read_from_ui(launched).await.map(Submission::line)
    }

    fn turn_started(&mut self, token: &CancellationToken) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
    }

    async fn answered(&mut self, launched: &Launched, answer: Answer) -> Flow {
        match answer {
            Answer::Refused(why) => {
                errln!("error: {}", why.message());
                self.command_failed = true;
            }
            Answer::Command { done, .. } => {
                self.command_failed = done.status != Status::Ok;
                show_command(&done);
            }
            Answer::Shell { command, run } => match run {
                ShellRun::Ran { output, ok } => {
                    outln!("{}", output.trim_end());
                    self.command_failed = !ok;
                }
                ShellRun::NotRun(why) => {
                    errln!("error: !{command} did not run: {why}");
                    self.command_failed = true;
                }
            },
            Answer::Said(Ok(text)) => {
                outln!("{text}");
                self.command_failed = false;
            }
            Answer::Said(Err(why)) => {
                errln!("error: {why}");
                self.command_failed = true;
            }
            Answer::Turn(outcome) => {
                self.last = Some(outcome);
                if launched.session.budget_spent() {
                    // The turn's end already said why; a new turn would
                    // only be refused again.
                    return Flow::Stop;
                }
            }
        }
        if self.one_shot {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    async fn switch(
        &mut self,
        mut launched: Launched,
        to: SessionSwitch,
    ) -> Result<Launched, LaunchError> {
        // The old session ends (saved) and the next one starts in this
        // process, with the same flags.
        launched.shutdown().await;
        self.wait_stdout().await;
        drop(launched);
        let next = launch((self.options)(to.target())).await?;
        for w in &next.warnings {
            errln!("warning: {w}");
        }
        if self.stream_json {
            self.stdout_sub = Some(super::run::spawn_stdout(&next.bus));
        }
        errln!("session {}", next.session.id);
        Ok(next)
    }
}

impl Console<'_> {
    /// Every event reached stdout.
    pub async fn wait_stdout(&mut self) {
        if let Some(s) = self.stdout_sub.take() {
            let _ = s.await;
        }
    }

    /// The exit status when no turn ran.
    pub fn failed_without_turn(&self) -> Option<ExitCode> {
        (self.last.is_none() && self.command_failed).then_some(ExitCode::FAILURE)
    }
}

/// A command's answer: what it rendered on stdout, a failure or refusal
/// as an error on stderr.
fn show_command(done: &Dispatched) {
    let text = done.text.trim_end();
    match done.status {
        Status::Ok if text.is_empty() => {}
        Status::Ok => outln!("{text}"),
        Status::Failed | Status::Refused => errln!("error: {text}"),
    }
}

/// The next prompt from the interactor (the one UI that reads the
/// person's input), once the UIs have shown the last answer.
async fn read_from_ui(launched: &Launched) -> Option<String> {
    launched.settle_ui().await;
    let ui = launched.session.interactor()?;
    match ui.ui_read_input().await {
        Ok(line) => line,
        Err(e) => {
            errln!("error: the UI could not read input: {e}");
            None
        }
    }
}
