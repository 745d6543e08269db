//! Approval keys for shell lines, from a real parser.
//!
//! An allowlist entry like `bash:git *` is meant to approve `git status`,
//! not `git status; rm -rf ~`. A tool that runs shell lines returns
//! [`approval_key`]: one line per simple command the shell would run
//! (separators, pipelines, `&&`/`||`, subshells, braces, `if`/`for`/
//! `while`/`case` bodies, comments all resolved by `brush-parser` in POSIX
//! `sh` mode, the shell the `process` capability runs), and one line per
//! output redirection (`> target`, `>> target`), so `git log > ~/.bashrc`
//! needs `bash:git *` **and** an entry for `> ~/.bashrc`. The kernel
//! approves a call from the allowlist only when every line matches.
//!
//! What cannot be classified with certainty becomes a line starting with
//! [`UNCLASSIFIED`], which no wildcard entry matches (so it is asked):
//! anything with `$` or a backquote (parameter, command and arithmetic
//! substitution, `$'...'` quoting), process substitution, here-documents,
//! function definitions, `eval`/`exec`/`source`/`.`/`trap`, `[[ ]]`,
//! arithmetic commands, coprocesses, and text that does not parse.

use brush_parser::ast::{
    AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand, Word,
};
use brush_parser::{Parser, ParserOptions};

/// The start of a key line the parser could not classify with certainty.
/// The kernel matches such a line only with an allowlist entry that has no
/// `*` and names it exactly (`docs/contracts.md`).
pub const UNCLASSIFIED: &str = "(unclassified) ";

/// Commands that run text as code, or change what later commands mean.
const INTERPRETERS: &[&str] = &["eval", "exec", "source", ".", "trap"];

/// The approval key of a shell line: its simple commands and output
/// redirections, one per line.
pub fn approval_key(line: &str) -> String {
    let lines = key_lines(line);
    if lines.is_empty() {
        return format!("{UNCLASSIFIED}{}", line.trim());
    }
    lines.join("\n")
}

/// The lines of [`approval_key`].
pub fn key_lines(line: &str) -> Vec<String> {
    let options = ParserOptions {
        enable_extended_globbing: false,
        posix_mode: true,
        sh_mode: true,
        ..ParserOptions::default()
    };
    let mut parser = Parser::new(line.as_bytes(), &options);
    match parser.parse_program() {
        Ok(program) => {
            let mut keys = Keys::default();
            for list in &program.complete_commands {
                keys.list(list);
            }
            keys.lines
        }
        Err(_) => vec![unclassified(line.trim())],
    }
}

fn unclassified(text: &str) -> String {
    // One line: a newline in it would start a line of its own.
    format!("{UNCLASSIFIED}{}", text.replace(['\n', '\r'], " "))
}

/// Whether a word is taken as written by the shell: no expansion that
/// could produce other words or run other commands.
fn certain(word: &Word) -> bool {
    !word.value.contains(['$', '`'])
}

#[derive(Default)]
struct Keys {
    lines: Vec<String>,
}

impl Keys {
    fn push(&mut self, line: String) {
        if !line.trim().is_empty() && !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }

    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            self.pipeline(&item.0.first);
            for next in &item.0.additional {
                match next {
                    AndOr::And(p) | AndOr::Or(p) => self.pipeline(p),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline) {
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &Command) {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.compound(compound);
                for r in redirects.iter().flat_map(|l| l.0.iter()) {
                    if let Some(line) = self.redirect(r) {
                        self.push(line);
                    }
                }
            }
            Command::Function(f) => self.push(unclassified(&format!(
                "function definition `{}`",
                f.fname.value
            ))),
            Command::ExtendedTest(..) => self.push(unclassified("[[ ... ]] test")),
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::BraceGroup(b) => self.list(&b.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::ForClause(f) => {
                if f.values.iter().flatten().any(|w| !certain(w)) {
                    self.push(unclassified(&format!("for {} in ...", f.variable_name)));
                }
                self.list(&f.body.list);
            }
            CompoundCommand::CaseClause(c) => {
                if !certain(&c.value) {
                    self.push(unclassified(&format!("case {} in ...", c.value.value)));
                }
                for item in &c.cases {
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c);
                    }
                    self.list(&e.body);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                self.push(unclassified("arithmetic command"))
            }
            CompoundCommand::Coprocess(_) => self.push(unclassified("coprocess")),
        }
    }

    fn simple(&mut self, simple: &SimpleCommand) {
        let mut parts: Vec<String> = Vec::new();
        let mut sure = true;
        let mut written: Vec<String> = Vec::new();
        let items = simple
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .chain(simple.suffix.iter().flat_map(|s| s.0.iter()));
        let mut name_seen = false;
        let push_name = |parts: &mut Vec<String>, sure: &mut bool| {
            if let Some(name) = &simple.word_or_name {
                *sure &= certain(name) && !INTERPRETERS.contains(&name.value.as_str());
                parts.push(name.value.clone());
            }
        };
        for (i, item) in items.enumerate() {
            let in_suffix = i >= simple.prefix.as_ref().map_or(0, |p| p.0.len());
            if in_suffix && !name_seen {
                push_name(&mut parts, &mut sure);
                name_seen = true;
            }
            match item {
                CommandPrefixOrSuffixItem::Word(w) => {
                    sure &= certain(w);
                    parts.push(w.value.clone());
                }
                CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                    sure &= certain(w);
                    parts.push(w.value.clone());
                }
                CommandPrefixOrSuffixItem::IoRedirect(r) => match self.redirect(r) {
                    Some(line) => written.push(line),
                    None => {
                        sure &= redirect_certain(r);
                        parts.push(r.to_string());
                    }
                },
                CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                    sure = false;
                    parts.push("<(...)".into());
                }
            }
        }
        if !name_seen {
            push_name(&mut parts, &mut sure);
        }
        let text = parts.join(" ");
        if sure {
            self.push(text);
        } else {
            self.push(unclassified(&text));
        }
        for line in written {
            self.push(line);
        }
    }

    /// The key line of a redirection that writes a file, `None` for the
    /// others (they stay with their command).
    fn redirect(&self, r: &IoRedirect) -> Option<String> {
        let (op, target) = match r {
            IoRedirect::File(_, kind, IoFileRedirectTarget::Filename(w)) => match kind {
                IoFileRedirectKind::Write | IoFileRedirectKind::Clobber => (">", w),
                IoFileRedirectKind::Append => (">>", w),
                IoFileRedirectKind::ReadAndWrite => ("<>", w),
                _ => return None,
            },
            IoRedirect::OutputAndError(w, append) => (if *append { ">>" } else { ">" }, w),
            _ => return None,
        };
        let line = format!("{op} {}", target.value);
        Some(if certain(target) {
            line
        } else {
            unclassified(&line)
        })
    }
}

/// Whether a redirection that stays with its command is certain: here-docs
/// and process substitutions are not, nor targets with expansions.
fn redirect_certain(r: &IoRedirect) -> bool {
    match r {
        IoRedirect::File(_, _, IoFileRedirectTarget::Filename(w))
        | IoRedirect::File(_, _, IoFileRedirectTarget::Duplicate(w)) => certain(w),
        IoRedirect::File(_, _, IoFileRedirectTarget::Fd(_)) => true,
        IoRedirect::File(_, _, IoFileRedirectTarget::ProcessSubstitution(..)) => false,
        IoRedirect::HereDocument(..) | IoRedirect::HereString(..) => false,
        IoRedirect::OutputAndError(w, _) => certain(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: &str) -> Vec<String> {
        key_lines(line)
    }

    fn is_unclassified(lines: &[String]) -> bool {
        lines.iter().any(|l| l.starts_with(UNCLASSIFIED))
    }

    #[test]
    fn operators_separate_commands() {
        assert_eq!(key("git status"), ["git status"]);
        assert_eq!(key("git log; rm -rf ~"), ["git log", "rm -rf ~"]);
        assert_eq!(key("a && b || c | d & e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(key("a\nb"), ["a", "b"]);
        assert_eq!(key("(cd x; make)"), ["cd x", "make"]);
        assert_eq!(key("{ a; b; }"), ["a", "b"]);
        assert_eq!(
            key("if test -f x; then make; else echo no; fi"),
            ["test -f x", "make", "echo no"]
        );
    }

    #[test]
    fn it_parses_as_sh_does() {
        // dash reads `((x))` as two subshells running `x`, not arithmetic.
        assert_eq!(key("((touch pwned))"), ["touch pwned"]);
        // `&>` is bash; in sh it is `&` then a redirection of nothing.
        assert_eq!(key("git status &> out"), ["git status", "> out"]);
    }

    #[test]
    fn comments_hide_nothing() {
        // The attack that fooled the hand split: a quote inside a comment.
        let k = key("git status #'\ngit --version;touch pwned;#'");
        assert_eq!(k, ["git status", "git --version", "touch pwned"]);
    }

    #[test]
    fn expansions_and_interpreters_are_unclassified() {
        for line in [
            "echo $(rm -rf ~)",
            "echo `id`",
            "git $'\\x3b' touch pwned",
            "echo $HOME",
            "eval 'rm -rf ~'",
            ". ./script",
            "diff <(ls a) b",
            "cat <<EOF\nhi\nEOF",
            "f() { rm -rf ~; }; f",
            "for x in $(ls); do echo; done",
            "git status &&",
        ] {
            assert!(is_unclassified(&key(line)), "{line}: {:?}", key(line));
        }
    }

    #[test]
    fn quotes_protect_operators_and_words_stay_as_written() {
        assert_eq!(
            key("git commit -m 'fix; stuff'"),
            ["git commit -m 'fix; stuff'"]
        );
        assert_eq!(key("echo a\\;b"), ["echo a\\;b"]);
        assert_eq!(key("FOO=1 make"), ["FOO=1 make"]);
    }

    #[test]
    fn writes_are_lines_of_their_own() {
        assert_eq!(key("git log > out.txt"), ["git log", "> out.txt"]);
        assert_eq!(key("echo a >> ~/.bashrc"), ["echo a", ">> ~/.bashrc"]);
        assert_eq!(key("make 2>&1"), ["make 2>& 1"]);
        assert_eq!(key("sort < in.txt"), ["sort < in.txt"]);
        assert!(is_unclassified(&key("echo a > $HOME/x")));
    }

    #[test]
    fn the_key_has_a_line_per_command() {
        assert_eq!(approval_key("  ls  "), "ls");
        assert_eq!(approval_key("ls && pwd"), "ls\npwd");
        assert!(approval_key(";").starts_with(UNCLASSIFIED));
        assert!(approval_key("").starts_with(UNCLASSIFIED));
    }
}
