//! `[command]`: the slash command a `kind = "command"` extension provides.
//! Declared in the manifest so the registry knows every command (for
//! `/help`, completion and shadowing) without instantiating any of them;
//! the component's `describe` must agree when it is first run.

use super::fields::Fields;
use super::kind::Kind;
use super::problems::Problems;

const KNOWN: &[&str] = &["name", "argument-hint", "turn-safe"];
const EXAMPLE: &str = "[command] with name = \"/review\"";

/// A command's name: `/` then letters, digits, `-` or `_`, and `:`
/// between namespaces (`/frontend:component`, a Markdown command in a
/// sub-folder).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct CommandName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a command name; write `/` followed by letters, digits, `-` or `_` (e.g. \"/review\")"
)]
pub struct InvalidCommandName(pub String);

impl CommandName {
    pub fn parse(text: &str) -> Result<Self, InvalidCommandName> {
        let rest = text.strip_prefix('/').unwrap_or("");
        let valid = !rest.is_empty()
            && rest.len() <= 64
            && !rest.starts_with(':')
            && !rest.ends_with(':')
            && !rest.contains("::")
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':');
        if valid {
            Ok(CommandName(text.to_string()))
        } else {
            Err(InvalidCommandName(text.to_string()))
        }
    }

    /// An alias from settings, written with or without the `/`.
    pub fn from_alias(text: &str) -> Result<Self, InvalidCommandName> {
        if text.starts_with('/') {
            Self::parse(text)
        } else {
            Self::parse(&format!("/{text}"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Read back from the form built into the binary
/// (`stud-bundled-manifests`): the name is checked again, as it was when
/// the manifest was parsed.
impl TryFrom<String> for CommandName {
    type Error = InvalidCommandName;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<CommandName> for String {
    fn from(name: CommandName) -> String {
        name.0
    }
}

impl std::fmt::Display for CommandName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `[command]` declares.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandDecl {
    pub name: CommandName,
    /// Shown after the name in `/help` and completion (`ID`, `[show|allow|deny]`).
    pub argument_hint: Option<String>,
    /// May run while a turn is running (it only reads, or acts at the next
    /// stage boundary).
    pub turn_safe: bool,
}

pub(crate) fn read_command(
    top: &Fields<'_>,
    kind: Option<Kind>,
    has_description: bool,
    p: &mut Problems,
) -> Option<CommandDecl> {
    let field = top.path("command");
    let table = top.table("command", EXAMPLE, p);
    if kind == Some(Kind::Command) && !has_description {
        p.push(
            top.path("description"),
            "required for kind = \"command\": `/help` shows it; write description = \"what the command does\"",
        );
    }
    match (kind, table) {
        (Some(Kind::Command), None) => {
            if top.get("command").is_none() {
                p.push(
                    &field,
                    format!("required for kind = \"command\": name the command; write {EXAMPLE}"),
                );
            }
            return None;
        }
        (Some(other), Some(_)) if other != Kind::Command => {
            p.push(
                &field,
                format!("only kind = \"command\" extensions declare a command; remove [command] (this is a kind = \"{other}\" extension)"),
            );
            return None;
        }
        (_, None) => return None,
        (_, Some(_)) => {}
    }
    let fields = Fields::new(table?, field);
    fields.unknown_keys(KNOWN, p);
    let name = fields
        .required_string("name", "name = \"/review\"", p)
        .and_then(|text| {
            CommandName::parse(text)
                .map_err(|e| p.push(fields.path("name"), e.to_string()))
                .ok()
        });
    let argument_hint = fields
        .string("argument-hint", "argument-hint = \"ID\"", p)
        .map(str::to_string);
    if let Some(hint) = &argument_hint
        && (hint.chars().count() > 80 || hint.chars().any(char::is_control))
    {
        p.push(
            fields.path("argument-hint"),
            "is longer than 80 characters or holds control characters; keep it a short line such as \"ID\"",
        );
    }
    let turn_safe = fields
        .boolean("turn-safe", "turn-safe = true", p)
        .unwrap_or(false);
    Some(CommandDecl {
        name: name?,
        argument_hint,
        turn_safe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_pattern() {
        for ok in ["/help", "/network-policy", "/a_b", "/x1"] {
            assert!(CommandName::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["help", "/", "/bad name", "/é", "//x", "/a/b", "/\u{1b}[2J"] {
            assert!(CommandName::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            CommandName::from_alias("m").map(|n| n.to_string()),
            Ok("/m".into())
        );
    }
}
