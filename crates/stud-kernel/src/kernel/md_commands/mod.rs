//! Markdown commands: `.md` prompt templates from `~/.stud/commands` and
//! `~/.claude/commands`, and in a trusted project `.stud/commands` and
//! `.claude/commands`, become slash commands (`/name`, a sub-folder's as
//! `/folder:name`). Running one sends its body, with the arguments put
//! in, as the prompt; `allowed-tools` narrows that turn's tools and
//! `model` picks that turn's model. Nothing runs when they load: a
//! command is text, and its turn passes the authority stack as any turn.
//!
//! Precedence: stud's folder before Claude Code's in a scope; the user's
//! commands before a project's (a repository never answers a name the
//! person set up); a command component before any Markdown command (the
//! Markdown one is left out with a warning).

mod definition;
mod expand;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use definition::{CommandFileError, MarkdownCommand, Origin};
pub use expand::expand;

use crate::extensions::ProjectScope;

/// Files looked at in one folder tree (a runaway tree is not walked whole).
const MAX_FILES: usize = 2000;

#[derive(Debug, Default, Clone)]
pub struct MarkdownCommands {
    by_name: BTreeMap<String, MarkdownCommand>,
}

/// A command's turn, made ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    pub prompt: String,
    pub allowed_tools: Option<Vec<String>>,
    pub model: Option<String>,
}

impl MarkdownCommands {
    /// Every command in scope, minus those whose name `taken` holds (the
    /// command components'), with one warning per file left out.
    pub fn load(
        stud_home: &Path,
        user_home: Option<&Path>,
        cwd: &Path,
        project: &ProjectScope,
        taken: &BTreeSet<String>,
    ) -> (Self, Vec<String>) {
        let mut folders: Vec<(PathBuf, Origin)> = vec![(stud_home.join("commands"), Origin::User)];
        if let Some(h) = user_home {
            folders.push((h.join(".claude").join("commands"), Origin::User));
        }
        if let ProjectScope::Trusted(stud) | ProjectScope::Changed(stud) = project {
            folders.push((stud.join("commands"), Origin::Project));
            folders.push((cwd.join(".claude").join("commands"), Origin::Project));
        }
        let mut out = MarkdownCommands::default();
        let mut warnings = Vec::new();
        for (root, origin) in folders {
            for file in md_files(&root) {
                match MarkdownCommand::read(&root, &file, origin) {
                    Ok(c) if taken.contains(&c.name) => warnings.push(format!(
                        "{}: {} is a command component's name; the component answers, this Markdown command is left out (rename the file)",
                        file.display(),
                        c.name
                    )),
                    Ok(c) => {
                        if let Some(first) = out.by_name.get(&c.name) {
                            if first.origin == Origin::Project || c.origin == Origin::Project {
                                warnings.push(format!(
                                    "{}: {} is already defined by {}; the first answers",
                                    file.display(),
                                    c.name,
                                    first.file.display()
                                ));
                            }
                            continue;
                        }
                        out.by_name.insert(c.name.clone(), c);
                    }
                    Err(e) => warnings.push(e.to_string()),
                }
            }
        }
        (out, warnings)
    }

    pub fn get(&self, name: &str) -> Option<&MarkdownCommand> {
        self.by_name.get(name)
    }

    pub fn all(&self) -> impl Iterator<Item = &MarkdownCommand> {
        self.by_name.values()
    }

    /// The turn `name` with arguments `raw` makes, if `name` is one.
    pub fn expand(&self, name: &str, raw: &str) -> Option<Expanded> {
        let c = self.by_name.get(name)?;
        Some(Expanded {
            prompt: expand(&c.body, raw),
            allowed_tools: c.allowed_tools.clone(),
            model: c.model.clone(),
        })
    }
}

/// The `.md` files under `root`, sorted, links to elsewhere not followed.
/// A folder that is not there is not walked: most of the four are absent,
/// and building a walker builds its glob and regex machinery (and asks
/// for the number of cores) each time.
fn md_files(root: &Path) -> Vec<PathBuf> {
    if !root.is_dir() {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(Some(4))
        .build()
        .filter_map(Result::ok)
        .take(MAX_FILES)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An absent folder gives nothing without a walk; a folder reached
    /// through a link is still read, as the walker reads a linked root.
    #[cfg(unix)]
    #[test]
    fn an_absent_folder_is_skipped_and_a_linked_one_read() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(md_files(&dir.path().join("commands")).is_empty());
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join("git")).expect("mkdir");
        std::fs::write(real.join("git/commit.md"), "commit").expect("write");
        std::fs::write(real.join("notes.txt"), "not a command").expect("write");
        let link = dir.path().join("commands");
        std::os::unix::fs::symlink(&real, &link).expect("link");
        assert_eq!(md_files(&link), [link.join("git/commit.md")]);
        let file = dir.path().join("file");
        std::fs::write(&file, "x").expect("write");
        assert!(md_files(&file).is_empty());
    }

    #[test]
    fn users_commands_come_first_and_components_win() {
        let home = tempfile::tempdir().expect("home");
        let user = tempfile::tempdir().expect("user");
        let project = tempfile::tempdir().expect("project");
        let write = |p: PathBuf, t: &str| {
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, t).expect("write");
        };
        write(home.path().join("commands/fix.md"), "stud's fix $ARGUMENTS");
        write(user.path().join(".claude/commands/fix.md"), "claude's fix");
        write(user.path().join(".claude/commands/help.md"), "not the help");
        write(
            project.path().join(".claude/commands/fix.md"),
            "the repo's fix",
        );
        write(
            project.path().join(".claude/commands/fe/component.md"),
            "make $1",
        );
        std::fs::create_dir_all(project.path().join(".stud")).expect("mkdir");
        let taken: BTreeSet<String> = ["/help".to_string()].into();
        let trusted = ProjectScope::Trusted(project.path().join(".stud"));
        let (c, w) = MarkdownCommands::load(
            home.path(),
            Some(user.path()),
            project.path(),
            &trusted,
            &taken,
        );
        assert_eq!(
            c.expand("/fix", "it").map(|e| e.prompt).as_deref(),
            Some("stud's fix it")
        );
        assert_eq!(
            c.expand("/fe:component", "Button")
                .map(|e| e.prompt)
                .as_deref(),
            Some("make Button")
        );
        assert!(c.get("/help").is_none());
        assert!(
            w.iter()
                .any(|w| w.contains("/help") && w.contains("component answers")),
            "{w:?}"
        );
        assert!(w.iter().any(|w| w.contains("the first answers")), "{w:?}");
        let untrusted = ProjectScope::Untrusted(project.path().join(".stud"));
        let (c, _) = MarkdownCommands::load(
            home.path(),
            Some(user.path()),
            project.path(),
            &untrusted,
            &taken,
        );
        assert!(
            c.get("/fe:component").is_none(),
            "an untrusted project's command was read"
        );
    }
}
