//! `ask-user`: a question for the person, through the interaction protocol.
//! In a headless run nobody can answer; the model gets an error saying so.

use stud_sdk::host::interaction;
use stud_sdk::prelude::*;

#[derive(Default)]
struct AskUser;

impl Tool for AskUser {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "ask-user",
            "Ask the user a question and wait for the answer",
        )
        .param("question", "string", "What to ask", true)
        .read_only()
    }

    fn invoke(&mut self, _call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let question = args.str("question")?;
        match interaction::ask(question)? {
            Some(answer) => Ok(ToolOutput::text(answer)),
            None => Err(Error::tool(
                "no-answer",
                "the user did not answer; continue without it or ask differently",
            )),
        }
    }
}

stud_sdk::export_tool!(AskUser);
