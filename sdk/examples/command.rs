//! A command: `/<crate name> WORDS...` counts the words and characters it
//! is given, without asking the model.

use stud_sdk::prelude::*;

/// `/` and the crate's name.
const NAME: &str = concat!("/", env!("CARGO_PKG_NAME"));

#[derive(Default)]
struct Count;

impl Command for Count {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(NAME, "Count the words and characters of the text").hint("TEXT")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        let words = args.raw.split_whitespace().count();
        let chars = args.raw.trim().chars().count();
        Ok(CommandOutput::text(format!(
            "{words} words, {chars} characters"
        )))
    }
}

stud_sdk::export_command!(Count);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_and_characters() {
        let args = CommandArgs {
            raw: "two words".into(),
            positional: vec!["two".into(), "words".into()],
            options: vec![],
        };
        let out = Count.execute(args).expect("execute");
        assert_eq!(out.rendered, "2 words, 9 characters");
    }
}
