//! An agent definition: a Markdown file whose YAML front matter says what
//! the child may use and whose body is its system prompt (the shape of
//! Claude Code's `.claude/agents/*.md`, so those files carry over).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::kernel::authority::Mode;

/// Where a definition came from; a later scope shadows an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    Bundled,
    Global(PathBuf),
    Project(PathBuf),
}

impl AgentSource {
    /// For messages: the file, or `bundled`.
    pub fn describe(&self) -> String {
        match self {
            AgentSource::Bundled => "bundled".into(),
            AgentSource::Global(p) | AgentSource::Project(p) => p.display().to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// Tool names (a trailing `*` matches a prefix); `None`: the parent's.
    pub tools: Option<Vec<String>>,
    /// `None` (or `inherit`): the parent's model.
    pub model: Option<String>,
    pub max_iterations: Option<u32>,
    pub state_machine: Option<String>,
    /// Asked for a stricter mode than the parent's; never looser.
    pub mode: Option<Mode>,
    /// At most this much (USD), within the parent's share.
    pub max_cost_usd: Option<f64>,
    /// The body: the child's system prompt.
    pub prompt: String,
    pub source: AgentSource,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DefinitionError {
    #[error(
        "{file}: an agent definition starts with YAML front matter between two `---` lines (name, description, ...); see docs/subagents.md"
    )]
    NoFrontMatter { file: String },
    #[error("{file}: front matter: {reason}")]
    FrontMatter { file: String, reason: String },
    #[error("{file}: `{field}`: {reason}")]
    Field {
        file: String,
        field: &'static str,
        reason: String,
    },
}

/// The front matter as written. `color` (Claude Code's) is accepted and
/// not used; any other unknown key is an error, so a typo is seen.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    tools: Option<ToolList>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    max_iterations: Option<u32>,
    #[serde(default)]
    state_machine: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    max_cost_usd: Option<f64>,
    #[serde(default)]
    #[allow(dead_code)]
    color: Option<String>,
}

/// `tools: [read, grep]`, or Claude Code's `tools: Read, Grep`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Text(String),
}

impl AgentDefinition {
    /// Parse the file's text. `file` names it in errors.
    pub fn parse(text: &str, source: AgentSource) -> Result<Self, DefinitionError> {
        let file = source.describe();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (yaml, body) = crate::kernel::front_matter::split(text)
            .ok_or(DefinitionError::NoFrontMatter { file: file.clone() })?;
        let fm: FrontMatter =
            serde_yaml_ng::from_str(yaml).map_err(|e| DefinitionError::FrontMatter {
                file: file.clone(),
                reason: e.to_string(),
            })?;
        let field = |field: &'static str, reason: String| DefinitionError::Field {
            file: file.clone(),
            field,
            reason,
        };
        if !valid_name(&fm.name) {
            return Err(field(
                "name",
                format!(
                    "`{}` is not an agent name (lower-case letters, digits, - and _, at most 64)",
                    fm.name
                ),
            ));
        }
        if fm.description.trim().is_empty() {
            return Err(field(
                "description",
                "say when the model should use this agent".into(),
            ));
        }
        let tools = fm.tools.map(|t| match t {
            ToolList::List(l) => l,
            ToolList::Text(s) => s
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
        });
        // Claude Code's tool names are capitalised (`Read`); stud's are not.
        let tools = tools.map(|l| {
            l.into_iter()
                .map(|t| {
                    if t.starts_with("mcp__") {
                        t
                    } else {
                        t.to_lowercase()
                    }
                })
                .collect()
        });
        let mode = match fm.mode.as_deref() {
            None => None,
            Some(m) => Some(m.parse::<Mode>().map_err(|e| field("mode", e))?),
        };
        if fm.max_iterations == Some(0) {
            return Err(field("maxIterations", "must be at least 1".into()));
        }
        if let Some(c) = fm.max_cost_usd
            && !(c.is_finite() && c >= 0.0)
        {
            return Err(field(
                "maxCostUsd",
                "must be a number of USD, 0 or more".into(),
            ));
        }
        let prompt = body.trim().to_string();
        if prompt.is_empty() {
            return Err(field(
                "body",
                "the text after the front matter is the agent's system prompt; it is empty".into(),
            ));
        }
        Ok(AgentDefinition {
            name: fm.name,
            description: fm.description.trim().to_string(),
            tools,
            model: fm.model.filter(|m| m != "inherit"),
            max_iterations: fm.max_iterations,
            state_machine: fm.state_machine,
            mode,
            max_cost_usd: fm.max_cost_usd,
            prompt,
            source,
        })
    }

    /// Read and parse a definition file.
    pub fn read(path: &Path, source: AgentSource) -> Result<Self, DefinitionError> {
        let text = std::fs::read_to_string(path).map_err(|e| DefinitionError::FrontMatter {
            file: path.display().to_string(),
            reason: format!("cannot read it: {e}"),
        })?;
        Self::parse(&text, source)
    }

    /// Whether its tool list lets the child have tool `name`.
    pub fn allows_tool(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|list| {
            list.iter().any(|t| match t.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => t == name,
            })
        })
    }
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentDefinition, DefinitionError> {
        AgentDefinition::parse(text, AgentSource::Global("/a/reviewer.md".into()))
    }

    #[test]
    fn claude_code_shape_carries_over() {
        let d = parse(
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep, mcp__gh__*\nmodel: inherit\ncolor: blue\n---\nYou review code.\n",
        )
        .unwrap();
        assert_eq!(d.tools.as_deref().unwrap(), ["read", "grep", "mcp__gh__*"]);
        assert_eq!(d.model, None);
        assert_eq!(d.prompt, "You review code.");
        assert!(d.allows_tool("grep"));
        assert!(d.allows_tool("mcp__gh__create_issue"));
        assert!(!d.allows_tool("bash"));
    }

    #[test]
    fn lists_modes_and_bounds() {
        let d = parse(
            "---\nname: fixer\ndescription: d\ntools: [bash, edit]\nmaxIterations: 4\nmode: ask\nmaxCostUsd: 0.5\n---\nFix.",
        )
        .unwrap();
        assert_eq!(d.max_iterations, Some(4));
        assert_eq!(d.mode, Some(Mode::Ask));
        assert_eq!(d.max_cost_usd, Some(0.5));
        assert!(
            parse("---\nname: a\ndescription: d\n---\nx")
                .unwrap()
                .allows_tool("anything")
        );
    }

    #[test]
    fn bad_files_name_the_file_and_field() {
        let e = parse("no front matter").unwrap_err();
        assert!(e.to_string().starts_with("/a/reviewer.md:"), "{e}");
        let e = parse("---\nname: Bad Name\ndescription: d\n---\nx").unwrap_err();
        assert!(e.to_string().contains("`name`"), "{e}");
        let e = parse("---\nname: a\ndescription: d\ntols: [x]\n---\nx").unwrap_err();
        assert!(e.to_string().contains("tols"), "{e}");
        let e = parse("---\nname: a\ndescription: d\nmode: loose\n---\nx").unwrap_err();
        assert!(e.to_string().contains("`mode`"), "{e}");
        let e = parse("---\nname: a\ndescription: d\n---\n  \n").unwrap_err();
        assert!(e.to_string().contains("`body`"), "{e}");
        let e = parse("---\nname: a\ndescription: d\nmaxIterations: 0\n---\nx").unwrap_err();
        assert!(e.to_string().contains("maxIterations"), "{e}");
    }
}
