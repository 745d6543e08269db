//! The simple commands of a shell line, for approval keys.
//!
//! An allowlist entry like `bash:git *` is meant to approve `git status`,
//! not `git status; rm -rf ~`. A tool that runs shell lines returns one
//! line per simple command as its approval key ([`approval_key`]); the
//! kernel approves the call from the allowlist only when every line matches
//! an entry. This is a conservative split, not a shell parser: it cuts at
//! `;`, `&`, `|`, newlines, subshell parentheses, `$(...)` and backquotes,
//! outside single quotes, and cuts too often rather than too seldom (a
//! needless cut only means a question to the person). Redirections stay
//! part of their command.

/// One line per simple command of `line`, trimmed, empty ones dropped.
pub fn simple_commands(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    // Open constructs: '"' double quotes, '(' a subshell or `$(`, '`'.
    let mut open: Vec<char> = Vec::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        let in_double = open.last() == Some(&'"');
        match c {
            '\\' => {
                cur.push(c);
                if let Some(next) = chars.next() {
                    cur.push(next);
                }
            }
            '\'' if !in_double => {
                cur.push(c);
                for next in chars.by_ref() {
                    cur.push(next);
                    if next == '\'' {
                        break;
                    }
                }
            }
            '"' => {
                cur.push(c);
                if in_double {
                    open.pop();
                } else {
                    open.push('"');
                }
            }
            '`' => {
                cut(&mut out, &mut cur);
                if open.last() == Some(&'`') {
                    open.pop();
                } else {
                    open.push('`');
                }
            }
            '(' if !in_double || cur.ends_with('$') => {
                cut(&mut out, &mut cur);
                open.push('(');
            }
            ')' if open.last() == Some(&'(') => {
                cut(&mut out, &mut cur);
                open.pop();
            }
            ';' | '&' | '|' | '\n' if !in_double => cut(&mut out, &mut cur),
            _ => cur.push(c),
        }
    }
    cut(&mut out, &mut cur);
    out
}

/// The approval key of a shell line: its simple commands, one per line
/// (the whole line trimmed when it has none).
pub fn approval_key(line: &str) -> String {
    let commands = simple_commands(line);
    if commands.is_empty() {
        line.trim().to_string()
    } else {
        commands.join("\n")
    }
}

fn cut(out: &mut Vec<String>, cur: &mut String) {
    // `$(`, `<(` and `>(` leave their first character behind.
    let piece = cur
        .trim()
        .trim_end_matches(['$', '<', '>'])
        .trim_end()
        .to_string();
    if !piece.is_empty() {
        out.push(piece);
    }
    cur.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Vec<String> {
        simple_commands(line)
    }

    #[test]
    fn operators_separate_commands() {
        assert_eq!(split("git status"), ["git status"]);
        assert_eq!(split("git log; rm -rf ~"), ["git log", "rm -rf ~"]);
        assert_eq!(split("a && b || c | d & e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(split("a\nb"), ["a", "b"]);
        assert_eq!(split("(cd x; make)"), ["cd x", "make"]);
    }

    #[test]
    fn substitutions_are_commands_too() {
        assert_eq!(split("echo $(rm -rf ~)"), ["echo", "rm -rf ~"]);
        assert_eq!(split("echo `id`"), ["echo", "id"]);
        assert_eq!(split("echo \"$(id) x\""), ["echo \"", "id", "x\""]);
        assert_eq!(split("diff <(ls a) b"), ["diff", "ls a", "b"]);
    }

    #[test]
    fn quotes_protect_operators() {
        assert_eq!(
            split("git commit -m 'fix; stuff'"),
            ["git commit -m 'fix; stuff'"]
        );
        assert_eq!(split("echo \"a; b\" > out"), ["echo \"a; b\" > out"]);
        assert_eq!(split("echo a\\;b"), ["echo a\\;b"]);
    }

    #[test]
    fn the_key_has_a_line_per_command() {
        assert_eq!(approval_key("  ls  "), "ls");
        assert_eq!(approval_key("ls && pwd"), "ls\npwd");
        assert_eq!(approval_key(";"), ";");
    }
}
