//! Dependencies between extensions (`[dependencies] other = "^1.2"`):
//! loading follows them in topological order; an extension whose
//! dependency is missing, at a version outside the range, or part of a
//! cycle is left out with a message saying which and why (and so is
//! anything that needs it).

use std::collections::{BTreeMap, BTreeSet};

use super::discovery::Discovered;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependencyProblem {
    #[error(
        "extension `{id}` needs `{needs}` {range}, which is not installed; install it or remove `{id}`"
    )]
    Missing {
        id: String,
        needs: String,
        range: String,
    },
    #[error(
        "extension `{id}` needs `{needs}` {range}, but version {found} is installed; install a matching version"
    )]
    WrongVersion {
        id: String,
        needs: String,
        range: String,
        found: String,
    },
    #[error("extension `{id}` is left out because `{needs}`, which it needs, is left out")]
    Unavailable { id: String, needs: String },
    #[error("extensions {} depend on each other in a cycle; none of them is loaded. Break the cycle in their [dependencies]", .ids.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", "))]
    Cycle { ids: Vec<String> },
}

/// The extensions that can load, dependencies first (ties keep the input
/// order), and the problems of those that cannot.
pub fn order(found: Vec<Discovered>) -> (Vec<Discovered>, Vec<DependencyProblem>) {
    let mut problems = Vec::new();
    let versions: BTreeMap<String, semver::Version> = found
        .iter()
        .map(|d| (d.manifest.id.to_string(), d.manifest.version.clone()))
        .collect();
    // Drop extensions with unmet dependencies, repeatedly (dropping one can
    // strand another).
    let mut out: BTreeSet<String> = BTreeSet::new();
    for d in &found {
        for dep in &d.manifest.dependencies {
            let (id, needs) = (d.manifest.id.to_string(), dep.id.to_string());
            let range = dep.version.to_string();
            match versions.get(&needs) {
                None => problems.push(DependencyProblem::Missing { id, needs, range }),
                Some(v) if !dep.version.matches(v) => {
                    problems.push(DependencyProblem::WrongVersion {
                        id,
                        needs,
                        range,
                        found: v.to_string(),
                    })
                }
                Some(_) => continue,
            }
            out.insert(d.manifest.id.to_string());
        }
    }
    loop {
        let mut changed = false;
        for d in &found {
            let id = d.manifest.id.to_string();
            if out.contains(&id) {
                continue;
            }
            if let Some(dep) = d
                .manifest
                .dependencies
                .iter()
                .find(|x| out.contains(x.id.as_str()))
            {
                problems.push(DependencyProblem::Unavailable {
                    id: id.clone(),
                    needs: dep.id.to_string(),
                });
                out.insert(id);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Kahn's algorithm over what is left, in input order.
    let mut left: Vec<Discovered> = found
        .into_iter()
        .filter(|d| !out.contains(d.manifest.id.as_str()))
        .collect();
    let mut placed: BTreeSet<String> = BTreeSet::new();
    let mut ordered = Vec::new();
    loop {
        let ready = left.iter().position(|d| {
            d.manifest
                .dependencies
                .iter()
                .all(|dep| placed.contains(dep.id.as_str()))
        });
        match ready {
            Some(i) => {
                let d = left.remove(i);
                placed.insert(d.manifest.id.to_string());
                ordered.push(d);
            }
            None => break,
        }
    }
    if !left.is_empty() {
        // Whatever remains waits on itself: report the cycles' members
        // (and those that need them, which are in the cycle's closure).
        let mut ids: Vec<String> = left.iter().map(|d| d.manifest.id.to_string()).collect();
        ids.sort();
        problems.push(DependencyProblem::Cycle { ids });
    }
    (ordered, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::discovery::from_folder;
    use crate::extensions::scope::Scope;

    fn ext(root: &std::path::Path, id: &str, version: &str, deps: &str) -> Discovered {
        let dir = root.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("extension.toml"),
            format!(
                "id = \"{id}\"\nname = \"{id}\"\nversion = \"{version}\"\nkind = \"tool\"\ncontract = \"^0.1\"\ndescription = \"t\"\ncomponent = \"c.wasm\"\n\n[dependencies]\n{deps}\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("c.wasm"), b"x").unwrap();
        from_folder(&dir, Scope::Global).unwrap()
    }

    fn ids(v: &[Discovered]) -> Vec<&str> {
        v.iter().map(|d| d.manifest.id.as_str()).collect()
    }

    #[test]
    fn orders_dependencies_first_and_reports_gaps_and_cycles() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let (ok, problems) = order(vec![
            ext(r, "b", "1.0.0", "a = \"^1\""),
            ext(r, "a", "1.2.0", ""),
            ext(r, "c", "1.0.0", ""),
        ]);
        assert_eq!(ids(&ok), ["a", "b", "c"]);
        assert!(problems.is_empty());

        let (ok, problems) = order(vec![
            ext(r, "x", "1.0.0", "y = \"^1\""),
            ext(r, "y", "1.0.0", "x = \"^1\""),
            ext(r, "needs-missing", "1.0.0", "ghost = \"^1\""),
            ext(r, "old", "1.0.0", "c = \"^2\""),
            ext(r, "c", "1.0.0", ""),
            ext(r, "top", "1.0.0", "old = \"^1\""),
        ]);
        assert_eq!(ids(&ok), ["c"]);
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("`ghost`") && t.contains("not installed")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("version 1.0.0 is installed")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("`top` is left out because `old`")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("`x`, `y`") && t.contains("cycle")),
            "{text:?}"
        );
    }
}
