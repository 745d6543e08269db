//! `!command` from the person: run through the `bash` tool on the path a
//! model's call takes (the authority stack asks in the ask mode, guards
//! apply, events record it), its output shown to the person and added to
//! the next prompt, so the model knows what they saw.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::act::{Called, NO_ONE_TO_ASK};
use super::payloads::result_text;
use super::session::Session;

/// Most characters of a command's output carried into the next prompt.
const NOTE_CHARS: usize = 16 * 1024;

/// What a `!command` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellRun {
    /// It ran; `ok` is false when it failed (its output says how).
    Ran { output: String, ok: bool },
    /// It did not run: denied, or it needed an approval nobody could give.
    NotRun(String),
}

impl Session {
    /// Run the person's `command` through `bash`; what it printed goes
    /// with the next prompt.
    pub async fn run_shell(&mut self, command: &str, cancel: &CancellationToken) -> ShellRun {
        let arguments = json!({ "command": command }).to_string();
        let run = match self
            .call_for_person("shell", "bash", arguments, cancel)
            .await
        {
            Called::Ran(r) => ShellRun::Ran {
                output: result_text(&r.content),
                ok: !r.is_error,
            },
            Called::Refused(r) => ShellRun::NotRun(result_text(&r.content)),
            Called::Halted(_) => ShellRun::NotRun(NO_ONE_TO_ASK.into()),
        };
        if let ShellRun::Ran { output, .. } = &run {
            let mut shown: String = output.chars().take(NOTE_CHARS).collect();
            if shown.len() < output.len() {
                shown.push_str("\n[output cut]");
            }
            self.turn.shell_notes.push(format!(
                "<shell-output command=\"{}\" run-by=\"the person\">\n{}\n</shell-output>",
                command.replace('"', "%22"),
                shown.replace("</shell-output", "<\\/shell-output")
            ));
        }
        run
    }

    /// `prompt` with what the person's `!command`s printed since the last
    /// prompt below it. Taken when the prompt is made ready, so a plain
    /// turn and a workflow's task both carry it.
    pub(crate) fn with_shell_notes(&mut self, prompt: String) -> String {
        std::mem::take(&mut self.turn.shell_notes)
            .into_iter()
            .fold(prompt, |p, note| p + "\n\n" + &note)
    }
}
