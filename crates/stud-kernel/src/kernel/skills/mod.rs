//! Agent Skills with progressive disclosure. At start only each skill's
//! name and description are read, and a catalogue of them (within
//! [`CATALOGUE_BUDGET`]) goes into the system prompt whenever the `skill`
//! tool is offered. The model loads a skill's instructions with the
//! `skill` tool, and its files one by one the same way (`resources`);
//! its scripts run only through `bash`, so the authority stack decides.
//!
//! Folders, first found wins: `~/.stud/skills`, `~/.agents/skills`,
//! `~/.claude/skills`, then in a trusted project `.stud/skills`,
//! `.agents/skills`, `.claude/skills`: a repository never replaces a
//! skill the person installed. An untrusted project's are never read.

mod resources;
mod skill_file;
mod tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use skill_file::{Skill, SkillFileError, SkillOrigin};
pub use tool::{SKILL_TOOL, run as run_skill, skill_key, skill_spec};

use crate::extensions::ProjectScope;

/// Characters of the catalogue in the system prompt (about 2,000
/// tokens): past it, skills are listed by name only, and past twice it
/// only counted.
pub const CATALOGUE_BUDGET: usize = 8_000;
/// A description longer than this is cut in the catalogue (the whole one
/// comes with the skill).
const SHOWN_DESCRIPTION: usize = 300;
/// Skill folders looked at in one skills folder.
const MAX_SKILLS: usize = 500;

#[derive(Debug, Default, Clone)]
pub struct SkillCatalog {
    skills: BTreeMap<String, Skill>,
    /// The system prompt's part, made once: it goes into every request.
    catalogue: Option<String>,
}

impl SkillCatalog {
    /// The skills in scope, with one warning per skill left out.
    pub fn load(
        stud_home: &Path,
        user_home: Option<&Path>,
        cwd: &Path,
        project: &ProjectScope,
    ) -> (Self, Vec<String>) {
        let mut folders: Vec<(PathBuf, SkillOrigin)> =
            vec![(stud_home.join("skills"), SkillOrigin::User)];
        if let Some(h) = user_home {
            folders.push((h.join(".agents").join("skills"), SkillOrigin::User));
            folders.push((h.join(".claude").join("skills"), SkillOrigin::User));
        }
        if let ProjectScope::Trusted(stud) | ProjectScope::Changed(stud) = project {
            folders.push((stud.join("skills"), SkillOrigin::Project));
            folders.push((cwd.join(".agents").join("skills"), SkillOrigin::Project));
            folders.push((cwd.join(".claude").join("skills"), SkillOrigin::Project));
        }
        let mut catalog = SkillCatalog::default();
        let mut warnings = Vec::new();
        for (root, origin) in folders {
            for folder in skill_folders(&root) {
                match Skill::read(&folder, origin) {
                    Ok(s) => match catalog.skills.get(&s.name) {
                        Some(first) => {
                            if origin == SkillOrigin::Project {
                                warnings.push(format!(
                                    "skill `{}` in {} is left out: {} already has that name",
                                    s.name,
                                    folder.display(),
                                    first.folder.display()
                                ));
                            }
                        }
                        None => {
                            catalog.skills.insert(s.name.clone(), s);
                        }
                    },
                    Err(e) => warnings.push(e.to_string()),
                }
            }
        }
        catalog.catalogue = catalog.compose_catalogue();
        (catalog, warnings)
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    pub fn all(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The system prompt's part: what each skill is for, within the
    /// budget.
    pub fn catalogue(&self) -> Option<&str> {
        self.catalogue.as_deref()
    }

    fn compose_catalogue(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut out = format!(
            "<skills>\nSkills are instructions (and files) for particular tasks. When a task matches a skill's description, call the `{SKILL_TOOL}` tool with its name first and follow what it says.\n"
        );
        let mut named_only = Vec::new();
        let mut not_shown = 0usize;
        for s in self.skills.values() {
            let description: String = s.description.chars().take(SHOWN_DESCRIPTION).collect();
            let line = format!("- {}: {}\n", s.name, description.replace('\n', " "));
            if out.len() + line.len() <= CATALOGUE_BUDGET {
                out.push_str(&line);
            } else if out.len()
                + named_only
                    .iter()
                    .map(|n: &String| n.len() + 2)
                    .sum::<usize>()
                < 2 * CATALOGUE_BUDGET
            {
                named_only.push(s.name.clone());
            } else {
                not_shown += 1;
            }
        }
        if !named_only.is_empty() {
            out.push_str(&format!(
                "More skills (load one to see what it is for): {}\n",
                named_only.join(", ")
            ));
        }
        if not_shown > 0 {
            out.push_str(&format!("And {not_shown} more not listed here.\n"));
        }
        out.push_str("</skills>");
        Some(out)
    }
}

/// What `/skills` and `stud skills list` show.
pub fn listing(catalog: &SkillCatalog) -> String {
    if catalog.is_empty() {
        return "No Agent Skills: put a skill's folder (with its SKILL.md) in ~/.stud/skills, ~/.agents/skills or ~/.claude/skills, or in a trusted project's .stud/skills, .agents/skills or .claude/skills".into();
    }
    let mut out = String::from("Skills (the model loads one with the `skill` tool):\n");
    for s in catalog.all() {
        out.push_str(&format!(
            "  {}  ({}, {})\n      {}\n",
            s.name,
            s.origin.word(),
            s.folder.display(),
            s.description.replace('\n', " ")
        ));
    }
    out.trim_end().to_string()
}

/// Folders under `root` that hold a `SKILL.md`, sorted.
fn skill_folders(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .take(MAX_SKILLS)
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(root: &Path, name: &str, description: &str) {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nDo {name}.\n"),
        )
        .expect("write");
    }

    #[test]
    fn the_users_skills_come_first_and_untrusted_ones_are_not_read() {
        let home = tempfile::tempdir().expect("home");
        let user = tempfile::tempdir().expect("user");
        let project = tempfile::tempdir().expect("project");
        write_skill(
            &user.path().join(".claude/skills"),
            "review",
            "the user's review",
        );
        write_skill(
            &project.path().join(".agents/skills"),
            "review",
            "the repo's review",
        );
        write_skill(
            &project.path().join(".agents/skills"),
            "deploy",
            "the repo's deploy",
        );
        std::fs::create_dir_all(project.path().join(".claude/skills/broken")).expect("mkdir");
        std::fs::write(
            project.path().join(".claude/skills/broken/SKILL.md"),
            "---\nname: Broken\ndescription: x\n---\n",
        )
        .expect("write");
        let trusted = ProjectScope::Trusted(project.path().join(".stud"));
        let (c, w) = SkillCatalog::load(home.path(), Some(user.path()), project.path(), &trusted);
        assert_eq!(
            c.get("review").map(|s| s.description.as_str()),
            Some("the user's review")
        );
        assert!(c.get("deploy").is_some());
        assert!(w.iter().any(|w| w.contains("broken/SKILL.md:2:")), "{w:?}");
        assert!(
            w.iter().any(|w| w.contains("already has that name")),
            "{w:?}"
        );
        let untrusted = ProjectScope::Untrusted(project.path().join(".stud"));
        let (c, _) = SkillCatalog::load(home.path(), Some(user.path()), project.path(), &untrusted);
        assert!(c.get("deploy").is_none());
    }

    #[test]
    fn the_catalogue_keeps_to_its_budget() {
        let home = tempfile::tempdir().expect("home");
        let root = home.path().join("skills");
        for i in 0..300 {
            write_skill(&root, &format!("skill-{i:03}"), &"d".repeat(200));
        }
        let (c, _) = SkillCatalog::load(home.path(), None, home.path(), &ProjectScope::None);
        let text = c.catalogue().expect("some");
        assert!(text.len() <= 2 * CATALOGUE_BUDGET + 200, "{}", text.len());
        assert!(text.contains("- skill-000: ddd"));
        assert!(
            text.contains("More skills") && text.contains("skill-299")
                || text.contains("more not listed")
        );
    }
}
