//! Approval keys for shell lines, from a real parser, as a closed world.
//!
//! An allowlist entry like `bash:git *` is meant to approve `git status`,
//! not `git status; rm -rf ~`. A tool that runs shell lines returns
//! [`approval_key`]: one line per simple command the shell would run and
//! one line per output redirection (`> target`, `>> target`), so
//! `git log > ~/.bashrc` needs `bash:git *` **and** an entry for
//! `> ~/.bashrc`. The kernel approves a call from the allowlist only when
//! every line matches. The line is parsed by `brush-parser` in POSIX `sh`
//! mode, the shell the `process` capability runs (`sh -c`, dash on
//! Debian); bash is kept in mind too, as `sh` is bash on some systems.
//!
//! The deriver is a **closed world**: only what it models completely gives
//! ordinary key lines; every other node gives a line starting with
//! [`UNCLASSIFIED`], which no wildcard entry matches (so it is asked).
//! Recursing into a construct it does not understand and approving what it
//! finds inside would let the construct's own parts (a `case` pattern, a
//! loop variable, a redirection's word) run or change things unseen.
//!
//! Modeled, so ordinary key lines:
//! - simple commands whose words are all literal (`literal` in the
//!   source): quoting is fine; no `$` or backquote anywhere, no unquoted
//!   glob or brace character, a tilde only where it means `$HOME` (`~`,
//!   `~/x`) or nothing (`HEAD~1`), one plain line of text;
//! - pipelines (also with `!`), `&&`, `||`, `;`, `&`, newlines, comments;
//! - subshells `( ... )`, brace groups `{ ...; }` and `if`/`elif`/`else`
//!   **without** a redirection attached. These bind nothing (no variable,
//!   no pattern, no word of their own), so their key is the key of their
//!   commands. A redirection attached to one would apply to every command
//!   inside and is expanded by the outer shell (`{ git status; } <
//!   "$(touch x)"`); it is not modeled, so the whole group is unclassified;
//! - on a simple command: output redirections (`>`, `>>`, `>|`, `<>`, and
//!   `&>` as the parser reads it) to literal paths, as key lines of their
//!   own; input from a literal path (`< in.txt`) and fd duplications
//!   (`2>&1`, `>&2`, `3>&-`) stay on the command's line, after its words.
//!
//! Not modeled, so unclassified: `case`, `for`, `while`, `until`,
//! `select`, arithmetic commands and `for ((...))`, `[[ ]]`, function
//! definitions, coprocesses, any redirection on a compound command,
//! here-documents, here-strings, process substitution, any `$` or
//! backquote, an assignment before a command or alone (`VAR=x cmd`,
//! `VAR=x`), redirections to bash's network paths (`/dev/tcp/...`,
//! `/dev/udp/...`), duplications onto a word that is not an fd (bash's
//! `>&file` writes `file`), text that does not parse, commands named by a
//! builtin that runs text or changes what later commands mean
//! (`RUN_OTHERS` and the lists beside it in the source), and a call with
//! a working folder of its own ([`approval_key_in`]).

use std::fmt::Display;

use brush_parser::ast::{
    AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IfClauseCommand,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, RedirectList, SimpleCommand,
    Word,
};
use brush_parser::{Parser, ParserOptions};

/// The start of a key line the parser could not classify with certainty.
/// The kernel matches such a line only with an allowlist entry that has no
/// `*` and names it exactly (`docs/contracts.md`).
pub const UNCLASSIFIED: &str = "(unclassified) ";

// Command names (after quote removal) whose key line would not say what
// runs. A literal simple command names the program the shell starts, so
// its key is honest unless the name is one of the builtins or keywords of
// dash or bash below. `printf -v` and `wait -p` assign a variable too:
// `assigns` catches them by their options. The other builtins of dash and
// bash neither run text nor leave state behind, so their key says all
// they do: `:`, `true`, `false`, `echo`, `printf` (no option), `test`,
// `[`, `pwd`, `type`, `times`, `help`, `caller`, `dirs`, `kill` (the key
// names what it signals), `wait` (no option), `break`, `continue`,
// `return`, `exit`, `logout`, `suspend` (these only stop early, so the key
// names more than ran), `bg`/`fg` (job control is off in `sh -c`).

/// Builtins that run text as shell code or another program in the
/// shell's place: `fc` (history, an editor), `jobs -x`, `compgen` and
/// `complete` (`-C`/`-F`), `bind -x`, `mapfile`/`readarray -C` run some.
const RUN_OTHERS: &[&str] = &[
    ".",
    "source",
    "eval",
    "exec",
    "command",
    "builtin",
    "trap",
    "fc",
    "jobs",
    "compgen",
    "complete",
    "bind",
    "mapfile",
    "readarray",
];

/// Builtins that change how later names are found or words read: dash
/// expands aliases in `sh -c`, `hash -p` binds a name to any file,
/// `enable` loads builtins from a file or hides others.
const CHANGE_LOOKUP: &[&str] = &[
    "alias", "unalias", "hash", "enable", "set", "shopt", "compopt", "history",
];

/// Builtins that assign or remove variables (`PATH`, `HOME`, ...) or the
/// positional parameters that later commands see.
const ASSIGN: &[&str] = &[
    "export", "readonly", "declare", "typeset", "local", "unset", "read", "getopts", "let", "shift",
];

/// Builtins that change the folder or process state later programs
/// inherit (`chdir` is dash's `cd`).
const CHANGE_STATE: &[&str] = &["cd", "chdir", "pushd", "popd", "umask", "ulimit", "disown"];

/// Bash keywords that the `sh` parser reads as plain names, while bash
/// runs something else (`time` runs its pipeline).
const BASH_KEYWORDS: &[&str] = &["time", "coproc", "select", "function", "[[", "]]"];

/// Whether a command named `name` is not modeled: one of the lists above.
fn unmodeled_name(name: &str) -> bool {
    [
        RUN_OTHERS,
        CHANGE_LOOKUP,
        ASSIGN,
        CHANGE_STATE,
        BASH_KEYWORDS,
    ]
    .iter()
    .any(|names| names.contains(&name))
}

/// The approval key of a shell line run in the project folder: its simple
/// commands and output redirections, one per line.
pub fn approval_key(line: &str) -> String {
    approval_key_in(line, None)
}

/// The approval key of a shell line run in `cwd`, a folder inside the
/// project (`None`, empty or `.` for the project folder itself).
///
/// Another folder changes what a literal command does (`git status` in a
/// folder whose `.git/config` sets `core.fsmonitor` runs that program),
/// so a key for the project folder does not cover it: the whole key is
/// one unclassified line that names the folder.
pub fn approval_key_in(line: &str, cwd: Option<&str>) -> String {
    if let Some(dir) = cwd.filter(|d| !d.is_empty() && *d != ".") {
        return unclassified(&format!("in `{dir}`: {}", line.trim()));
    }
    let lines = key_lines(line);
    if lines.is_empty() {
        return unclassified(line.trim());
    }
    lines.join("\n")
}

/// The lines of [`approval_key`].
pub fn key_lines(line: &str) -> Vec<String> {
    // brush-parser 0.4 can allocate without bound on some here-document
    // lines (`git * <<$( > --oneline ` asked for gigabytes, found by the
    // property test). Here-documents and here-strings are not modeled
    // anyway, so a line holding `<<` anywhere is unclassified unparsed.
    if line.contains("<<") {
        return vec![unclassified(line.trim())];
    }
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

/// An unclassified key line: one line, since a newline in it would start
/// a line of its own.
fn unclassified(text: &str) -> String {
    format!("{UNCLASSIFIED}{}", text.replace(['\n', '\r'], " "))
}

/// The word as the command receives it (quotes removed), when the shell
/// takes it as written; `None` when any expansion could change it.
///
/// Stays conservative: any `$` or backquote, even quoted; an unquoted
/// `*`, `?` or `[` (pathname expansion); an unquoted `{` or `}` except the
/// word `{}` (bash brace expansion runs `{touch,pwned}`, and `{var}>`
/// assigns); a control character but tab, or a Unicode line separator (a
/// key line is one plain line: a newline would start another, an escape
/// sequence could redraw what the user reads, a NUL ends the argument); a
/// tilde other than [`plain_tilde`]; an unquoted operator character (the
/// parser would not have put one in a word).
fn literal(raw: &str) -> Option<String> {
    if raw.chars().any(|c| matches!(c, '$' | '`') || off_line(c)) {
        return None;
    }
    if raw == "{}" {
        return Some(raw.to_string());
    }
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::new();
    let mut quote = None;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), _) => out.push(c),
            (Some(_), '\\') => {
                i += 1;
                let next = *chars.get(i)?;
                if !matches!(next, '"' | '\\') {
                    out.push('\\');
                }
                out.push(next);
            }
            (Some(_), _) => out.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                i += 1;
                out.push(*chars.get(i)?);
            }
            (None, '~') if plain_tilde(&chars, i) => out.push(c),
            (None, '~' | '*' | '?' | '[' | '{' | '}') => return None,
            (None, '(' | ')' | '<' | '>' | '|' | '&' | ';' | ' ' | '\t') => return None,
            (None, _) => out.push(c),
        }
        i += 1;
    }
    quote.is_none().then_some(out)
}

/// Whether `c` has no place on a plain line of text: a control
/// character but tab, or a Unicode line or paragraph separator.
fn off_line(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether the unquoted `~` at `i` expands only to `$HOME` or not at all:
/// the word `~`, a word starting `~/`, or a `~` inside a word after
/// anything but `=` or `:` (bash expands `~` after those in arguments that
/// look like assignments, and `~user`, `~+`, `~-` name other folders).
fn plain_tilde(chars: &[char], i: usize) -> bool {
    match i.checked_sub(1).and_then(|p| chars.get(p)) {
        None => matches!(chars.get(1), None | Some('/')),
        Some(prev) => !matches!(prev, '=' | ':'),
    }
}

/// Whether a literal command assigns a variable through an option:
/// bash's `printf -v var` (any option: `-vvar`, `--`) and `wait -p var`.
fn assigns(name: &str, args: &[String]) -> bool {
    match name {
        "printf" => args.first().is_some_and(|a| a.starts_with('-')),
        "wait" => args.iter().any(|a| a.starts_with('-')),
        _ => false,
    }
}

/// Whether a redirection path is one bash opens as a network connection.
fn network(path: &str) -> bool {
    path.contains("/dev/tcp/") || path.contains("/dev/udp/")
}

/// Whether a duplication target is an fd (`1`), a close (`-`) or a move
/// (`3-`). Bash reads `>&file` as "stdout and stderr to `file`".
fn fd_word(raw: &str) -> bool {
    let digits = raw.strip_suffix('-').unwrap_or(raw);
    raw == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// What a redirection on a simple command adds to the key.
enum Redirect {
    /// Stays on the command's line (input, fd duplication).
    Inline(String),
    /// A key line of its own (it writes a file).
    Write(String),
    /// Not modeled: the command is unclassified.
    Unmodeled,
}

/// How a redirection on a simple command is keyed.
fn redirect(r: &IoRedirect) -> Redirect {
    // The parser reads any run of digits before `>` as an fd; dash takes
    // one digit only, so `git status 10>out` runs `git status 10`.
    if let IoRedirect::File(Some(fd), ..) = r
        && *fd > 9
    {
        return Redirect::Unmodeled;
    }
    match r {
        IoRedirect::File(_, kind, IoFileRedirectTarget::Filename(w)) => file_redirect(r, kind, w),
        IoRedirect::File(_, _, IoFileRedirectTarget::Fd(_)) => Redirect::Inline(r.to_string()),
        IoRedirect::File(
            _,
            IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput,
            IoFileRedirectTarget::Duplicate(w),
        ) if fd_word(&w.value) => Redirect::Inline(r.to_string()),
        IoRedirect::OutputAndError(w, append) => written(if *append { ">>" } else { ">" }, w),
        IoRedirect::File(..) | IoRedirect::HereDocument(..) | IoRedirect::HereString(..) => {
            Redirect::Unmodeled
        }
    }
}

/// A redirection to or from a named file.
fn file_redirect(r: &IoRedirect, kind: &IoFileRedirectKind, target: &Word) -> Redirect {
    match kind {
        IoFileRedirectKind::Write | IoFileRedirectKind::Clobber => written(">", target),
        IoFileRedirectKind::Append => written(">>", target),
        IoFileRedirectKind::ReadAndWrite => written("<>", target),
        IoFileRedirectKind::Read if safe_path(target) => Redirect::Inline(r.to_string()),
        _ => Redirect::Unmodeled,
    }
}

/// The key line of a redirection that writes `target`.
fn written(op: &str, target: &Word) -> Redirect {
    if safe_path(target) {
        Redirect::Write(format!("{op} {}", target.value))
    } else {
        Redirect::Unmodeled
    }
}

/// Whether a redirection target is a literal path to a file.
fn safe_path(target: &Word) -> bool {
    literal(&target.value).is_some_and(|path| !network(&path))
}

/// Whether no redirection is attached to a compound command.
fn unredirected(redirects: Option<&RedirectList>) -> bool {
    redirects.is_none_or(|list| list.0.is_empty())
}

/// The key of a simple command being built.
#[derive(Default)]
struct SimpleKey {
    /// The words as written, the name first.
    words: Vec<String>,
    /// The same words with quotes removed.
    values: Vec<String>,
    /// Redirections that stay on the line.
    inline: Vec<String>,
    /// Key lines of the files it writes.
    writes: Vec<String>,
}

impl SimpleKey {
    /// The key of `simple`, `None` when it is not modeled.
    fn of(simple: &SimpleCommand) -> Option<Self> {
        let mut key = Self::default();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                // Assignments change what the command (or the shell) sees.
                CommandPrefixOrSuffixItem::IoRedirect(r) => key.redirect(r)?,
                _ => return None,
            }
        }
        if let Some(name) = &simple.word_or_name {
            key.word(name)?;
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                // `make CC=gcc`: an argument, not an assignment.
                CommandPrefixOrSuffixItem::Word(w)
                | CommandPrefixOrSuffixItem::AssignmentWord(_, w) => key.word(w)?,
                CommandPrefixOrSuffixItem::IoRedirect(r) => key.redirect(r)?,
                CommandPrefixOrSuffixItem::ProcessSubstitution(..) => return None,
            }
        }
        key.honest().then_some(key)
    }

    fn word(&mut self, w: &Word) -> Option<()> {
        self.values.push(literal(&w.value)?);
        self.words.push(w.value.clone());
        Some(())
    }

    fn redirect(&mut self, r: &IoRedirect) -> Option<()> {
        match redirect(r) {
            Redirect::Inline(text) => self.inline.push(text),
            Redirect::Write(line) => self.writes.push(line),
            Redirect::Unmodeled => return None,
        }
        Some(())
    }

    /// Whether the command's name says what it does (see
    /// [`unmodeled_name`]).
    fn honest(&self) -> bool {
        match self.values.split_first() {
            Some((name, args)) => !unmodeled_name(name) && !assigns(name, args),
            None => true,
        }
    }

    /// The command's line (empty for a bare redirection that writes).
    fn line(&self) -> String {
        let mut parts = self.words.clone();
        parts.extend(self.inline.iter().cloned());
        parts.join(" ")
    }
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

    /// A node the deriver does not model: one unclassified line.
    fn unmodeled(&mut self, node: &impl Display) {
        self.push(unclassified(&node.to_string()));
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
        if pipeline.timed.is_some() {
            return self.unmodeled(pipeline);
        }
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &Command) {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) if unredirected(redirects.as_ref()) => {
                self.compound(compound)
            }
            Command::Compound(..) | Command::Function(_) | Command::ExtendedTest(..) => {
                self.unmodeled(command)
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::BraceGroup(b) => self.list(&b.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::IfClause(i) => self.if_clause(i),
            _ => self.unmodeled(compound),
        }
    }

    fn if_clause(&mut self, i: &IfClauseCommand) {
        self.list(&i.condition);
        self.list(&i.then);
        for e in i.elses.iter().flatten() {
            if let Some(c) = &e.condition {
                self.list(c);
            }
            self.list(&e.body);
        }
    }

    fn simple(&mut self, simple: &SimpleCommand) {
        let Some(key) = SimpleKey::of(simple) else {
            return self.unmodeled(simple);
        };
        self.push(key.line());
        for line in key.writes {
            self.push(line);
        }
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
        assert_eq!(key("! a | b"), ["a", "b"]);
        assert_eq!(key("(make x; make)"), ["make x", "make"]);
        assert_eq!(key("{ a; b; }"), ["a", "b"]);
        assert_eq!(
            key("if test -f x; then make; elif true; then :; else echo no; fi"),
            ["test -f x", "make", "true", ":", "echo no"]
        );
    }

    #[test]
    fn it_parses_as_sh_does() {
        // dash reads `((x))` as two subshells running `x`, not arithmetic.
        assert_eq!(key("((touch pwned))"), ["touch pwned"]);
        // `&>` is bash; in sh it is `&` then a redirection of nothing.
        assert_eq!(key("git status &> out"), ["git status", "> out"]);
        // A continuation joins the word, as in sh.
        assert_eq!(key("g\\\nit status"), ["git status"]);
    }

    #[test]
    fn comments_hide_nothing() {
        // The attack that fooled the hand split: a quote inside a comment.
        let k = key("git status #'\ngit --version;touch pwned;#'");
        assert_eq!(k, ["git status", "git --version", "touch pwned"]);
    }

    #[test]
    fn quotes_protect_operators_and_words_stay_as_written() {
        assert_eq!(
            key("git commit -m 'fix; stuff'"),
            ["git commit -m 'fix; stuff'"]
        );
        assert_eq!(key("echo a\\;b"), ["echo a\\;b"]);
        assert_eq!(key("\"git\" st\\atus"), ["\"git\" st\\atus"]);
        assert_eq!(key("make CC=gcc"), ["make CC=gcc"]);
        assert_eq!(key("git log HEAD~1"), ["git log HEAD~1"]);
        assert_eq!(key("find . -exec ls {} ;"), ["find . -exec ls {}"]);
    }

    #[test]
    fn writes_are_lines_of_their_own() {
        assert_eq!(key("git log > out.txt"), ["git log", "> out.txt"]);
        assert_eq!(key("echo a >> ~/.bashrc"), ["echo a", ">> ~/.bashrc"]);
        assert_eq!(key("echo a >| f 3<> g"), ["echo a", "> f", "<> g"]);
        assert_eq!(key(">x touch y"), ["touch y", "> x"]);
        assert_eq!(key("2>x touch y"), ["touch y", "> x"]);
        assert_eq!(key("> x"), ["> x"]);
    }

    #[test]
    fn reads_and_duplications_stay_on_the_line_after_the_words() {
        assert_eq!(key("make 2>&1"), ["make 2>& 1"]);
        assert_eq!(key("sort < in.txt"), ["sort < in.txt"]);
        assert_eq!(key("<in.txt sort -r"), ["sort -r < in.txt"]);
        assert_eq!(key("ls >&2 3>&-"), ["ls >& 2 3>& -"]);
    }

    /// Each construct, and whether the deriver models it.
    #[test]
    fn only_modeled_constructs_are_classified() {
        let table: &[(&str, bool)] = &[
            // Modeled.
            ("git status", true),
            ("'git' \"status\" \\-s", true),
            ("ls -la | sort > out", true),
            ("! git status", true),
            ("a; b & c\n# comment\nd", true),
            ("(git status)", true),
            ("{ git status; }", true),
            ("if git status; then ls; fi", true),
            ("cat ~ ~/x", true),
            ("echo '$HOME'x", false),
            ("echo '*' \"?\" \\[", true),
            ("echo a=b", true),
            ("echo {}", true),
            ("printf '%s\\n' x", true),
            ("wait", true),
            ("kill 1", true),
            ("git status < in 2>&1 >&2 3>&-", true),
            // Not modeled: compound commands other than groups and if.
            ("case a in `touch pwned`|a) git status;; esac", false),
            ("case a in a) git status;; esac", false),
            ("for PATH in bin; do git status; done", false),
            ("while false; do git status; done", false),
            ("until true; do git status; done", false),
            ("select x in a; do git status; done", false),
            ("f() { git status; }", false),
            ("function f { git status; }", false),
            ("[[ -n x ]]", false),
            ("coproc touch x", false),
            ("time touch x", false),
            // Redirections on compound commands.
            ("{ git status; } < \"$(touch pwned)\"", false),
            ("{ git status; } < in", false),
            ("{ git status; } > out", false),
            ("(git status) 2>&1", false),
            ("if true; then ls; fi > out", false),
            ("{ git status; } <<EOF\n$(touch pwned)\nEOF", false),
            // Here-documents, here-strings, process substitution.
            ("cat <<EOF\nhi\nEOF", false),
            ("cat <<'EOF'\nhi\nEOF", false),
            ("<<<x touch y", false),
            // brush-parser 0.4 allocated gigabytes on this one.
            ("git * <<$( > --oneline ", false),
            ("diff <(ls a) b", false),
            // Expansions.
            ("echo $(rm -rf ~)", false),
            ("echo `id`", false),
            ("echo \"$HOME\"", false),
            ("echo '$'", false),
            ("git $'\\x3b' touch pwned", false),
            ("echo $((1))", false),
            ("echo ${x:-$(touch x)}", false),
            ("[[ -n $(touch x) ]]", false),
            ("* status", false),
            ("g?t status", false),
            ("[t]ouch pwned", false),
            ("{touch,pwned}", false),
            ("echo {1..3}", false),
            ("true {PATH}>/dev/null", false),
            ("cat ~root/x", false),
            ("cat ~+", false),
            ("echo a=~/x", false),
            ("echo a=b:~/x", false),
            ("echo 'a\nb'", false),
            ("echo a\rb", false),
            ("echo 'a\u{1b}[2Kb'", false),
            ("git status\u{0}; ls", false),
            ("echo a\u{2028}b", false),
            ("echo 'a\tb'", true),
            // Assignments.
            ("PATH=bin git status", false),
            ("a=$(touch x)", false),
            ("x=1", false),
            // Redirection targets.
            ("git status > /dev/tcp/127.0.0.1/9", false),
            ("git status < /dev/udp/127.0.0.1/9", false),
            ("git status > \"/dev/tcp/h/9\"", false),
            ("git status >&out", false),
            ("git status > $HOME/x", false),
            // Builtins that run text or change state.
            ("alias git='touch pwned'\ngit status", false),
            ("hash -p ./bin/git git; git status", false),
            ("command touch x", false),
            ("exec touch x", false),
            ("eval 'rm -rf ~'", false),
            (". ./script", false),
            ("source ./script", false),
            ("cd evil && git status", false),
            ("chdir evil", false),
            ("export PATH=bin", false),
            ("read PATH < f", false),
            ("\\cd evil", false),
            ("\"eval\" x", false),
            ("e\\val x", false),
            ("printf -v PATH bin; git status", false),
            ("printf -vPATH bin", false),
            ("wait -n -p PATH", false),
            // The old open-world deriver's unclassified lines stay so.
            ("echo $(rm -rf ~)", false),
            ("eval 'rm -rf ~'", false),
            ("f() { rm -rf ~; }; f", false),
            ("for x in $(ls); do echo; done", false),
            ("FOO=1 make", false),
            ("echo a > $HOME/x", false),
            // Parse errors.
            ("git status &&", false),
            ("a |& b", false),
        ];
        let wrong: Vec<_> = table
            .iter()
            .filter(|(line, modeled)| is_unclassified(&key(line)) == *modeled)
            .map(|(line, modeled)| format!("{line:?} modeled={modeled}: {:?}", key(line)))
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn unclassified_lines_are_one_line_each() {
        for line in [
            "case a in\n a) git status;;\nesac",
            "cat <<EOF\n$(touch x)\nEOF",
            "echo 'a\nb'",
            "git status &&\n",
        ] {
            for l in key(line) {
                assert!(!l.contains(['\n', '\r']), "{line:?}: {l:?}");
            }
        }
    }

    #[test]
    fn literal_words_lose_their_quotes() {
        assert_eq!(literal("g\\it").as_deref(), Some("git"));
        assert_eq!(literal("'a b'\"c\\\"d\"").as_deref(), Some("a bc\"d"));
        assert_eq!(literal("\"a\\b\"").as_deref(), Some("a\\b"));
        assert_eq!(literal("~/x").as_deref(), Some("~/x"));
        assert_eq!(literal("HEAD~1").as_deref(), Some("HEAD~1"));
        assert_eq!(literal("'~root'").as_deref(), Some("~root"));
        assert_eq!(literal("~root"), None);
        assert_eq!(literal("x\\"), None);
    }

    #[test]
    fn a_working_folder_is_unclassified_and_named() {
        assert_eq!(
            approval_key_in("git status", Some("evil")),
            "(unclassified) in `evil`: git status"
        );
        assert_eq!(
            approval_key_in("git status\nls", Some("a\nb")),
            "(unclassified) in `a b`: git status ls"
        );
        for root in [None, Some(""), Some(".")] {
            assert_eq!(approval_key_in("git status", root), "git status");
        }
    }

    #[test]
    fn the_key_has_a_line_per_command() {
        assert_eq!(approval_key("  ls  "), "ls");
        assert_eq!(approval_key("ls && pwd"), "ls\npwd");
        assert!(approval_key(";").starts_with(UNCLASSIFIED));
        assert!(approval_key("").starts_with(UNCLASSIFIED));
        assert_eq!(approval_key("# a\n# b"), "(unclassified) # a # b");
    }
}
