//! What a line of input is: a prompt for the model or a slash command.
//! `//text` sends `/text` to the model; a first word with a second `/` in
//! it is a path (`/etc/hosts: what is this?`), also a prompt. Anything else
//! starting with `/` is a command and never reaches the model, even when
//! no command has that name. `!command` runs a shell command through the
//! `bash` tool; `!!text` sends `!text` to the model.

use crate::manifest::CommandName;
use crate::runtime::domain::CommandArgs;

#[derive(Debug)]
pub enum Input {
    Prompt(String),
    Command {
        name: String,
        args: CommandArgs,
    },
    /// `!command`: a shell command the person runs through `bash`.
    Shell(String),
    /// Starts like a command but cannot be one; the message says why.
    Invalid(String),
}

pub fn classify(text: &str) -> Input {
    let trimmed = text.trim_start();
    if let Some(literal) = trimmed.strip_prefix("!!") {
        return Input::Prompt(format!("!{literal}"));
    }
    if let Some(command) = trimmed.strip_prefix('!') {
        return match command.trim() {
            "" => Input::Invalid("`!` runs a shell command: write it after the `!`".into()),
            c => Input::Shell(c.to_string()),
        };
    }
    if let Some(literal) = trimmed.strip_prefix("//") {
        return Input::Prompt(format!("/{literal}"));
    }
    if !trimmed.starts_with('/') {
        return Input::Prompt(text.to_string());
    }
    let (word, rest) = trimmed
        .split_once(char::is_whitespace)
        .unwrap_or((trimmed, ""));
    if word[1..].contains('/') {
        return Input::Prompt(text.to_string());
    }
    if let Err(e) = CommandName::parse(word) {
        return Input::Invalid(format!(
            "{e}; to send the text to the model, start it with //"
        ));
    }
    if trimmed
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Input::Invalid(format!(
            "the arguments of {word} hold control characters; type them without"
        ));
    }
    Input::Command {
        name: word.to_string(),
        args: parse_args(rest.trim()),
    }
}

/// Whitespace-separated words; `--key=value` and `--flag` are options.
pub fn parse_args(raw: &str) -> CommandArgs {
    let mut positional = Vec::new();
    let mut options = Vec::new();
    for word in raw.split_whitespace() {
        match word.strip_prefix("--").filter(|w| !w.is_empty()) {
            Some(opt) => match opt.split_once('=') {
                Some((k, v)) => options.push((k.to_string(), v.to_string())),
                None => options.push((opt.to_string(), "true".to_string())),
            },
            None => positional.push(word.to_string()),
        }
    }
    CommandArgs {
        raw: raw.to_string(),
        positional,
        options,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(text: &str) -> (String, CommandArgs) {
        match classify(text) {
            Input::Command { name, args } => (name, args),
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn slash_words_are_commands_with_arguments() {
        let (name, args) = command("/model  claude-x --fast --effort=high");
        assert_eq!(name, "/model");
        assert_eq!(args.raw, "claude-x --fast --effort=high");
        assert_eq!(args.positional, vec!["claude-x"]);
        assert_eq!(
            args.options,
            vec![
                ("fast".to_string(), "true".to_string()),
                ("effort".to_string(), "high".to_string())
            ]
        );
        assert_eq!(command("/help").1.raw, "");
    }

    #[test]
    fn double_slash_and_paths_go_to_the_model() {
        let prompt = |t: &str| match classify(t) {
            Input::Prompt(p) => p,
            other => panic!("{t:?} gave {other:?}"),
        };
        assert_eq!(prompt("//help me"), "/help me");
        assert_eq!(
            prompt("/etc/hosts: what is this?"),
            "/etc/hosts: what is this?"
        );
        assert_eq!(prompt("hello /x"), "hello /x");
    }

    #[test]
    fn bad_names_and_control_characters_are_refused() {
        assert!(matches!(classify("/bad!name"), Input::Invalid(m) if m.contains("`/bad!name`")));
        assert!(matches!(classify("/"), Input::Invalid(_)));
        assert!(
            matches!(classify("/model \u{1b}[2Jx"), Input::Invalid(m) if m.contains("control"))
        );
    }
}
