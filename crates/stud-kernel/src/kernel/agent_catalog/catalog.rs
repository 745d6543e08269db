//! The agents a session can delegate to: the bundled `general`, then the
//! user's `~/.stud/agents/*.md`, then a trusted project's
//! `.stud/agents/*.md`, a later scope shadowing an earlier one by name.
//! A file that does not parse is left out with a warning naming it.

use std::collections::BTreeMap;
use std::path::Path;

use super::definition::{AgentDefinition, AgentSource};
use crate::config::AgentSettings;
use crate::extensions::discovery::ProjectScope;

/// Default for `agents.maxDepth`: sessions in a chain, the main one
/// included (2: a child may not start a grandchild).
pub const DEFAULT_MAX_DEPTH: u32 = 2;
/// Default for `agents.budgetShare`: the part of the parent's remaining
/// cost budget a child may spend.
pub const DEFAULT_BUDGET_SHARE: f64 = 0.5;
/// Default bound on a child's provider requests when its definition sets
/// none (never more than the parent's bound).
pub const DEFAULT_CHILD_ITERATIONS: u32 = 25;

const GENERAL: &str = include_str!("general.md");

pub struct AgentCatalog {
    agents: BTreeMap<String, AgentDefinition>,
    pub max_depth: u32,
    pub budget_share: f64,
    pub default_iterations: u32,
}

impl Default for AgentCatalog {
    fn default() -> Self {
        AgentCatalog {
            agents: BTreeMap::new(),
            max_depth: DEFAULT_MAX_DEPTH,
            budget_share: DEFAULT_BUDGET_SHARE,
            default_iterations: DEFAULT_CHILD_ITERATIONS,
        }
    }
}

impl AgentCatalog {
    /// Every definition in scope; one warning per file left out.
    pub fn load(
        stud_home: &Path,
        project: &ProjectScope,
        settings: &AgentSettings,
    ) -> (Self, Vec<String>) {
        let mut catalog = AgentCatalog {
            max_depth: settings.max_depth.unwrap_or(DEFAULT_MAX_DEPTH).max(1),
            budget_share: settings
                .budget_share
                .filter(|s| s.is_finite())
                .unwrap_or(DEFAULT_BUDGET_SHARE)
                .clamp(0.0, 1.0),
            default_iterations: settings
                .max_iterations
                .unwrap_or(DEFAULT_CHILD_ITERATIONS)
                .max(1),
            ..Default::default()
        };
        let mut warnings = Vec::new();
        match AgentDefinition::parse(GENERAL, AgentSource::Bundled) {
            Ok(d) => {
                catalog.agents.insert(d.name.clone(), d);
            }
            Err(e) => warnings.push(format!("bundled agent left out: {e}")),
        }
        catalog.scan(
            &stud_home.join("agents"),
            AgentSource::Global,
            &mut warnings,
        );
        if let ProjectScope::Trusted(root) | ProjectScope::Changed(root) = project {
            // Definitions only ever narrow what a child has, so a project
            // whose security items await review still has its agents.
            catalog.scan(&root.join("agents"), AgentSource::Project, &mut warnings);
        }
        (catalog, warnings)
    }

    fn scan(
        &mut self,
        dir: &Path,
        source: fn(std::path::PathBuf) -> AgentSource,
        warnings: &mut Vec<String>,
    ) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
            .collect();
        files.sort();
        let mut seen: BTreeMap<String, std::path::PathBuf> = BTreeMap::new();
        for path in files {
            match AgentDefinition::read(&path, source(path.clone())) {
                Ok(d)
                    if d.state_machine.is_some() && matches!(d.source, AgentSource::Project(_)) =>
                {
                    // A stage envelope approves tools without the mode gate;
                    // a repository may not attach one (as in its settings).
                    warnings.push(format!(
                        "agent `{}` in {} left out: a project's agent may not name a `stateMachine` (its stages would approve tools without asking); define it in ~/.stud/agents",
                        d.name,
                        path.display()
                    ));
                }
                Ok(d) => {
                    if let Some(first) = seen.get(&d.name) {
                        warnings.push(format!(
                            "agent `{}` in {} left out: {} already defines it; rename one",
                            d.name,
                            path.display(),
                            first.display()
                        ));
                        continue;
                    }
                    seen.insert(d.name.clone(), path);
                    self.agents.insert(d.name.clone(), d);
                }
                Err(e) => warnings.push(format!("agent left out: {e}")),
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.get(name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }

    pub fn all(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.agents.values()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_shadows_global_shadows_bundled() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("agents")).unwrap();
        std::fs::create_dir_all(project.path().join("agents")).unwrap();
        let def = |d: &str| format!("---\nname: general\ndescription: {d}\n---\nbody\n");
        std::fs::write(home.path().join("agents/g.md"), def("global")).unwrap();
        std::fs::write(project.path().join("agents/g.md"), def("project")).unwrap();
        std::fs::write(project.path().join("agents/bad.md"), "nope").unwrap();
        std::fs::write(
            project.path().join("agents/staged.md"),
            "---\nname: staged\ndescription: d\nstateMachine: plan-build-review\n---\nbody\n",
        )
        .unwrap();
        let settings = AgentSettings::default();
        let (c, w) = AgentCatalog::load(
            home.path(),
            &ProjectScope::Trusted(project.path().into()),
            &settings,
        );
        assert_eq!(c.get("general").unwrap().description, "project");
        assert!(w.iter().any(|w| w.contains("bad.md")), "{w:?}");
        // A project may not attach a state machine through an agent.
        assert!(c.get("staged").is_none());
        assert!(w.iter().any(|w| w.contains("stateMachine")), "{w:?}");
        let (c, _) = AgentCatalog::load(
            home.path(),
            &ProjectScope::Untrusted(project.path().into()),
            &settings,
        );
        assert_eq!(c.get("general").unwrap().description, "global");
        let (c, _) = AgentCatalog::load(Path::new("/nonexistent"), &ProjectScope::None, &settings);
        assert_eq!(c.get("general").unwrap().source, AgentSource::Bundled);
    }
}
