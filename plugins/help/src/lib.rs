//! `/help`: list the commands (each with its arguments and what it does) and the keys of the terminal.
use stud_sdk::host::session;
use stud_sdk::prelude::*;

/// Keys and input rules, shown under the list.
const KEYS: &str = "Input: a line starting with / runs a command and is never sent to the model; start with // to send text that begins with /. @path (a word with a . or /) attaches that project file as the read tool returns it; a protected or missing one refuses the prompt. @shot.png attaches an image for a model with vision. !command runs a shell command through bash (asked like any call); its output goes with your next prompt (!! sends text starting with !). /copy puts the last answer on the clipboard (OSC 52).
Keys (full-screen UI): Enter sends; during a turn Enter queues the text as the next turn and Ctrl-S steers the running turn with it (it joins the turn's next request); Esc stops the running turn, and between turns Esc Esc opens /rewind; Ctrl-C stops the turn (twice: quits) or, idle, clears the input or quits; Alt-Enter or Ctrl-J: new line; Up/Down: history (this project's, earlier sessions too); Ctrl-R: search the history (Enter takes the match, Esc goes back); Ctrl-G: edit the input in $EDITOR; Shift-Tab: plan mode on or off (/plan); Tab: complete an @path or a command; PageUp/PageDown: scroll; Ctrl-L: redraw the screen; Ctrl-D on an empty input: quit.
Line console (when input or output is not a terminal, or STUD_UI=line): Enter sends; Ctrl-C stops the turn (twice: quits); Ctrl-D quits.";

/// Widest name-and-hint column before the description.
const MAX_NAME_COLUMN: usize = 24;

#[derive(Default)]
struct Help;

impl Command for Help {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new("/help", "List the commands (each with its arguments and what it does) and the keys of the terminal.").hint("[COMMAND]")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        let overview = session::overview()?;
        let mut commands = overview.commands;
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(wanted) = args.positional.first() {
            let wanted = if wanted.starts_with('/') {
                wanted.clone()
            } else {
                format!("/{wanted}")
            };
            let Some(c) = commands
                .iter()
                .find(|c| c.name == wanted || c.aliases.contains(&wanted))
            else {
                return Err(Error::invalid_input(format!(
                    "no command {wanted}; /help lists them"
                )));
            };
            let mut out = format!(
                "{} {}\n  {}\n",
                c.name,
                c.argument_hint.clone().unwrap_or_default(),
                c.description
            );
            if !c.aliases.is_empty() {
                out.push_str(&format!("  aliases: {}\n", c.aliases.join(", ")));
            }
            out.push_str(&format!(
                "  from `{}` ({} scope); {}\n",
                c.extension,
                c.scope,
                if c.turn_safe {
                    "runs while a turn runs"
                } else {
                    "runs between turns"
                }
            ));
            return Ok(CommandOutput::text(out));
        }
        let rows: Vec<(String, &str)> = commands
            .iter()
            .map(|c| {
                let mut left = c.name.clone();
                if let Some(h) = &c.argument_hint {
                    left.push(' ');
                    left.push_str(h);
                }
                (left, c.description.as_str())
            })
            .collect();
        // Long argument hints go on a line of their own.
        let width = rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .filter(|w| *w <= MAX_NAME_COLUMN)
            .max()
            .unwrap_or(0);
        let mut out = String::from("Commands:\n");
        for (left, desc) in &rows {
            if left.chars().count() > width {
                out.push_str(&format!("  {left}\n  {:width$}  {desc}\n", ""));
            } else {
                out.push_str(&format!("  {left:width$}  {desc}\n"));
            }
        }
        let prompts: Vec<&str> = overview
            .mcp
            .iter()
            .flat_map(|s| s.prompts.iter().map(String::as_str))
            .collect();
        if !prompts.is_empty() {
            out.push_str("MCP server prompts (sent as your message; /mcp shows the servers):\n");
            for p in prompts {
                out.push_str(&format!("  {p}\n"));
            }
        }
        out.push('\n');
        out.push_str(KEYS);
        out.push('\n');
        Ok(CommandOutput::text(out))
    }
}

stud_sdk::export_command!(Help);
