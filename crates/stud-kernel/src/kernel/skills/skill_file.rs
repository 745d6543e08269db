//! One Agent Skill: a folder with a `SKILL.md` whose YAML front matter
//! holds `name` and `description` (the open format Claude Code, Codex,
//! goose and others read) and whose body is the instructions. Keys the
//! format adds (`license`, `compatibility`, `metadata`, `allowed-tools`)
//! are read past.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::kernel::front_matter;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillOrigin {
    /// `~/.stud/skills`, `~/.agents/skills` or `~/.claude/skills`.
    User,
    /// A trusted project's `.stud/skills`, `.agents/skills` or
    /// `.claude/skills`.
    Project,
}

impl SkillOrigin {
    pub fn word(self) -> &'static str {
        match self {
            SkillOrigin::User => "user",
            SkillOrigin::Project => "project",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The folder holding `SKILL.md` and the skill's resources.
    pub folder: PathBuf,
    pub origin: SkillOrigin,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SkillFileError {
    #[error("{file}:{line}: {reason}; the skill is skipped (docs/skills-and-commands.md)")]
    Invalid {
        file: String,
        line: usize,
        reason: String,
    },
}

#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
}

/// Longest description the format allows.
const MAX_DESCRIPTION: usize = 1024;

impl Skill {
    /// The skill in `folder` (its `SKILL.md`'s front matter only: the body
    /// is read when the model asks for it).
    pub fn read(folder: &Path, origin: SkillOrigin) -> Result<Self, SkillFileError> {
        let file = folder.join("SKILL.md");
        let invalid = |line: usize, reason: String| SkillFileError::Invalid {
            file: file.display().to_string(),
            line,
            reason,
        };
        let text = std::fs::read_to_string(&file).map_err(|e| invalid(1, e.to_string()))?;
        let (yaml, _) = front_matter::split(&text).ok_or_else(|| {
            invalid(
                1,
                "SKILL.md starts with YAML front matter between two `---` lines (name, description)"
                    .into(),
            )
        })?;
        let fm: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|e| {
            invalid(
                front_matter::error_line(&e).unwrap_or(1),
                format!("front matter: {e}"),
            )
        })?;
        let line_of = |key: &str| {
            1 + yaml
                .lines()
                .position(|l| l.starts_with(key))
                .map_or(1, |i| i + 1)
        };
        if !valid_name(&fm.name) {
            return Err(invalid(
                line_of("name"),
                format!(
                    "`name: {}` is not a skill name (1-64 lower-case letters, digits and single hyphens)",
                    fm.name
                ),
            ));
        }
        let description = fm.description.trim().to_string();
        if description.is_empty() || description.chars().count() > MAX_DESCRIPTION {
            return Err(invalid(
                line_of("description"),
                format!(
                    "`description` must say what the skill does and when to use it, in 1 to {MAX_DESCRIPTION} characters"
                ),
            ));
        }
        Ok(Skill {
            name: fm.name,
            description,
            folder: folder.to_path_buf(),
            origin,
        })
    }

    /// The instructions: `SKILL.md` without its front matter.
    pub fn body(&self) -> std::io::Result<String> {
        let text = std::fs::read_to_string(self.folder.join("SKILL.md"))?;
        Ok(match front_matter::split(&text) {
            Some((_, body)) => body.trim().to_string(),
            None => text,
        })
    }
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.contains("--")
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skill and its folder (kept alive: the body is read later).
    fn skill_in(text: &str) -> (tempfile::TempDir, Result<Skill, SkillFileError>) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("SKILL.md"), text).expect("write");
        let read = Skill::read(dir.path(), SkillOrigin::User);
        (dir, read)
    }

    fn skill(text: &str) -> Result<Skill, SkillFileError> {
        skill_in(text).1
    }

    #[test]
    fn the_open_format_is_read_and_extra_keys_are_passed() {
        let (_dir, s) = skill_in(
            "---\nname: pdf-processing\ndescription: Extract text from PDFs. Use when the user mentions PDFs.\nlicense: Apache-2.0\nmetadata:\n  author: example\nallowed-tools: Bash(python:*)\n---\n# PDF\nUse scripts/extract.py.\n",
        );
        let s = s.expect("valid");
        assert_eq!(s.name, "pdf-processing");
        assert!(s.description.starts_with("Extract text"));
        assert_eq!(s.body().expect("body"), "# PDF\nUse scripts/extract.py.");
    }

    #[test]
    fn invalid_front_matter_names_the_file_and_line() {
        let e = skill("---\nname: Bad_Name\ndescription: x\n---\nbody").unwrap_err();
        assert!(e.to_string().contains("SKILL.md:2:"), "{e}");
        let e = skill("---\nname: ok\ndescription: [unclosed\n---\nbody").unwrap_err();
        assert!(
            e.to_string().contains("SKILL.md:") && e.to_string().contains("front matter"),
            "{e}"
        );
        let e = skill("---\nname: ok\n---\nbody").unwrap_err();
        assert!(e.to_string().contains("description"), "{e}");
        let e = skill("no front matter").unwrap_err();
        assert!(e.to_string().contains("SKILL.md:1:"), "{e}");
    }
}
