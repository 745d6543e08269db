//! A Markdown command: a `.md` file whose body is a prompt template, with
//! optional YAML front matter as Claude Code writes it (`description`,
//! `argument-hint`, `allowed-tools`, `model`). Keys other agents add are
//! read past, so a file made for them loads unchanged.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::kernel::front_matter;

/// Where a command file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// `~/.stud/commands` or `~/.claude/commands`.
    User,
    /// A trusted project's `.stud/commands` or `.claude/commands`.
    Project,
}

#[derive(Debug, Clone)]
pub struct MarkdownCommand {
    /// `/name`, or `/folder:name` for a file in a sub-folder.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// The tools the command's turn may use (stud names); `None`: all.
    pub allowed_tools: Option<Vec<String>>,
    /// The model for the command's turn.
    pub model: Option<String>,
    /// The prompt template.
    pub body: String,
    pub file: PathBuf,
    pub origin: Origin,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommandFileError {
    #[error("{file}:{line}: front matter: {reason}; the command is left out")]
    FrontMatter {
        file: String,
        line: usize,
        reason: String,
    },
    #[error(
        "{file}: `{name}` is not a command name (letters, digits, - and _ in the file and folder names); the command is left out"
    )]
    Name { file: String, name: String },
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct FrontMatter {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    argument_hint: Option<Hint>,
    #[serde(default)]
    allowed_tools: Option<ToolList>,
    #[serde(default)]
    model: Option<String>,
}

/// `argument-hint: <file>`, or what YAML makes of `[message]`: a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum Hint {
    Text(String),
    List(Vec<String>),
}

impl Hint {
    fn text(self) -> String {
        match self {
            Hint::Text(t) => t,
            Hint::List(l) => l
                .iter()
                .map(|i| format!("[{i}]"))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// `allowed-tools: Read, Bash(git add:*)` or a YAML list.
#[derive(Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Text(String),
}

impl MarkdownCommand {
    /// The command in `file`, named by its path under `root`.
    pub fn read(root: &Path, file: &Path, origin: Origin) -> Result<Self, CommandFileError> {
        let text = std::fs::read_to_string(file).map_err(|e| CommandFileError::FrontMatter {
            file: file.display().to_string(),
            line: 1,
            reason: e.to_string(),
        })?;
        Self::parse(root, file, &text, origin)
    }

    pub fn parse(
        root: &Path,
        file: &Path,
        text: &str,
        origin: Origin,
    ) -> Result<Self, CommandFileError> {
        let shown = file.display().to_string();
        let name = command_name(root, file).ok_or_else(|| CommandFileError::Name {
            file: shown.clone(),
            name: file
                .strip_prefix(root)
                .unwrap_or(file)
                .display()
                .to_string(),
        })?;
        let (fm, body) = match front_matter::split(text) {
            Some((yaml, body)) if !yaml.trim().is_empty() => {
                // Claude Code reads `argument-hint: [a] [b]` (not YAML) as
                // text; so does this, line by line, when YAML fails.
                let fm = match serde_yaml_ng::from_str::<FrontMatter>(yaml) {
                    Ok(fm) => fm,
                    Err(e) => lenient(yaml).ok_or_else(|| CommandFileError::FrontMatter {
                        file: shown.clone(),
                        line: front_matter::error_line(&e).unwrap_or(1),
                        reason: e.to_string(),
                    })?,
                };
                (fm, body)
            }
            Some((_, body)) => (FrontMatter::default(), body),
            None => (FrontMatter::default(), text),
        };
        let description = fm
            .description
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| first_line(body));
        Ok(MarkdownCommand {
            name,
            description,
            argument_hint: fm.argument_hint.map(Hint::text),
            allowed_tools: fm.allowed_tools.map(|t| stud_tools(&t)),
            model: fm.model.filter(|m| !m.trim().is_empty() && m != "inherit"),
            body: body.to_string(),
            file: file.to_path_buf(),
            origin,
        })
    }
}

/// `key: value` lines as text; `None` when a line is neither that, blank
/// nor a comment.
fn lenient(yaml: &str) -> Option<FrontMatter> {
    let mut fm = FrontMatter::default();
    for line in yaml.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value)
            .to_string();
        match key.trim() {
            "description" => fm.description = Some(value),
            "argument-hint" => fm.argument_hint = Some(Hint::Text(value)),
            "allowed-tools" => fm.allowed_tools = Some(ToolList::Text(value)),
            "model" => fm.model = Some(value),
            _ => {}
        }
    }
    Some(fm)
}

/// `/a:b:name` for `root/a/b/name.md`.
fn command_name(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?.with_extension("");
    let parts: Vec<&str> = rel.iter().map(|p| p.to_str()).collect::<Option<_>>()?;
    let ok = |p: &&str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    (parts.iter().all(ok) && !parts.is_empty()).then(|| format!("/{}", parts.join(":")))
}

fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(100).collect()
}

/// Claude Code's tool names as stud's: `Read` is `read`, `Bash(git:*)` is
/// `bash` (the pattern is not kept: the mode still decides each call),
/// `mcp__server__tool` stays. Names stud has no tool for are dropped,
/// which only narrows further.
fn stud_tools(list: &ToolList) -> Vec<String> {
    let names: Vec<String> = match list {
        ToolList::List(l) => l.clone(),
        ToolList::Text(t) => split_top_level(t),
    };
    let mut out: Vec<String> = names
        .iter()
        .filter_map(|n| {
            let bare = n.trim().split('(').next().unwrap_or("").trim();
            let mapped = match bare {
                "Bash" => "bash",
                "Read" => "read",
                "Write" => "write",
                "Edit" => "edit",
                "MultiEdit" => "multi-edit",
                "Grep" => "grep",
                "Glob" => "glob",
                "LS" => "list",
                "WebFetch" => "web-fetch",
                "Task" => "task",
                "Skill" => "skill",
                other if other.starts_with("mcp__") => other,
                other
                    if other
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c == '-' || c == '_') =>
                {
                    other
                }
                _ => return None,
            };
            (!mapped.is_empty()).then(|| mapped.to_string())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Split `a, B(x, y), c` at the commas outside parentheses.
fn split_top_level(text: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(rel: &str, text: &str) -> Result<MarkdownCommand, CommandFileError> {
        let root = Path::new("/r/.claude/commands");
        MarkdownCommand::parse(root, &root.join(rel), text, Origin::Project)
    }

    #[test]
    fn claude_code_front_matter_is_read() {
        let c = parse(
            "git/commit.md",
            "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Read, TodoWrite\nargument-hint: [message]\ndescription: Create a git commit\nmodel: claude-3-5-haiku-20241022\n---\n## Context\nCommit with $ARGUMENTS\n",
        )
        .expect("parses");
        assert_eq!(c.name, "/git:commit");
        assert_eq!(c.description, "Create a git commit");
        assert_eq!(c.argument_hint.as_deref(), Some("[message]"));
        assert_eq!(c.allowed_tools, Some(vec!["bash".into(), "read".into()]));
        assert_eq!(c.model.as_deref(), Some("claude-3-5-haiku-20241022"));
        assert!(c.body.starts_with("## Context"));
    }

    #[test]
    fn no_front_matter_is_a_plain_template() {
        let c = parse("review.md", "# Review the code\nLook at $1.\n").expect("parses");
        assert_eq!(
            (c.name.as_str(), c.description.as_str()),
            ("/review", "Review the code")
        );
        assert_eq!(c.allowed_tools, None);
    }

    #[test]
    fn bad_front_matter_names_the_file_and_line() {
        let c = parse("hint.md", "---\nargument-hint: [pr] [priority]\n---\nx").expect("lenient");
        assert_eq!(c.argument_hint.as_deref(), Some("[pr] [priority]"));
        let c = parse("list.md", "---\nargument-hint: [message]\n---\nx").expect("yaml list");
        assert_eq!(c.argument_hint.as_deref(), Some("[message]"));
        let e = parse(
            "bad.md",
            "---\ndescription: ok\nallowed-tools: [a\nnot a key\n---\nx",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("bad.md:") && text.contains("front matter"),
            "{text}"
        );
        let e = parse("has space.md", "x").unwrap_err();
        assert!(matches!(e, CommandFileError::Name { .. }), "{e}");
    }
}
