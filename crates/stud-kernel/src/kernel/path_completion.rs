//! `@` completion over the project's files for a full-screen UI. Only
//! inside the project: a prefix that climbs out (`..`, an absolute path,
//! a folder that is a link to elsewhere) completes to nothing. What
//! `.gitignore` hides is not offered, and `.git` never is.

use std::path::{Component, Path, PathBuf};

use ignore::WalkBuilder;

/// The most entries the search anywhere in the project visits, so a Tab
/// in a huge tree stays quick.
const MAX_VISITED: usize = 50_000;

/// Completions of `prefix` (a path relative to `root`); folders end in
/// `/`. First the entries of the folder it names that start with its last
/// part; when there are none and it has no `/`, files anywhere whose name
/// contains it (case-insensitively), shortest path first.
pub fn complete(root: &Path, prefix: &str, limit: usize) -> Vec<String> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let (folder, stem) = match prefix.rfind('/') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let Some(dir) = inside(&root, folder) else {
        return Vec::new();
    };
    let mut found: Vec<String> = walker(&dir, Some(1))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            (e.depth() == 1 && name.starts_with(stem)).then(|| {
                let dir_mark = if e.file_type().is_some_and(|t| t.is_dir()) {
                    "/"
                } else {
                    ""
                };
                format!("{folder}{name}{dir_mark}")
            })
        })
        .collect();
    if found.is_empty() && !prefix.contains('/') && !prefix.is_empty() {
        found = anywhere(&root, &prefix.to_lowercase());
        found.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    } else {
        found.sort();
    }
    found.truncate(limit);
    found
}

/// `root/folder`, if it is a folder inside the project after links are
/// resolved.
fn inside(root: &Path, folder: &str) -> Option<PathBuf> {
    let rel = Path::new(folder);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let dir = root.join(rel).canonicalize().ok()?;
    (dir.starts_with(root) && dir.is_dir()).then_some(dir)
}

fn walker(dir: &Path, depth: Option<usize>) -> impl Iterator<Item = ignore::DirEntry> {
    WalkBuilder::new(dir)
        .max_depth(depth)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
}

fn anywhere(root: &Path, needle: &str) -> Vec<String> {
    walker(root, None)
        .take(MAX_VISITED)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.to_lowercase().contains(needle))
        })
        .filter_map(|e| {
            let rel = e.path().strip_prefix(root).ok()?;
            Some(rel.to_str()?.replace('\\', "/"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        std::fs::create_dir_all(p.join("src/nested")).expect("mkdir");
        std::fs::create_dir_all(p.join("target/debug")).expect("mkdir");
        std::fs::create_dir_all(p.join(".git")).expect("mkdir");
        for f in [
            "src/main.rs",
            "src/map.rs",
            "src/nested/deep_main.rs",
            "README.md",
            ".env",
            "target/debug/main.o",
            ".git/HEAD",
        ] {
            std::fs::write(p.join(f), "x").expect("write");
        }
        std::fs::write(p.join(".gitignore"), "target/\n").expect("write");
        dir
    }

    #[test]
    fn a_folder_lists_what_starts_with_the_last_part() {
        let p = project();
        assert_eq!(
            complete(p.path(), "src/ma", 10),
            ["src/main.rs", "src/map.rs"]
        );
        assert_eq!(
            complete(p.path(), "src/", 10),
            ["src/main.rs", "src/map.rs", "src/nested/"]
        );
        let top = complete(p.path(), "", 20);
        assert!(
            top.contains(&"src/".to_string()) && top.contains(&".env".to_string()),
            "{top:?}"
        );
        assert!(
            !top.iter()
                .any(|e| e.starts_with("target") || e.starts_with(".git/")),
            "{top:?}"
        );
    }

    #[test]
    fn a_bare_word_finds_files_anywhere_but_not_ignored_ones() {
        let p = project();
        assert_eq!(
            complete(p.path(), "main", 10),
            ["src/main.rs", "src/nested/deep_main.rs"]
        );
        assert_eq!(complete(p.path(), "main", 1), ["src/main.rs"]);
        assert!(complete(p.path(), "HEAD", 10).is_empty());
    }

    #[test]
    fn nothing_outside_the_project_is_offered() {
        let p = project();
        assert!(complete(p.path(), "../", 10).is_empty());
        assert!(complete(p.path(), "/etc/pa", 10).is_empty());
        assert!(complete(p.path(), "src/../../", 10).is_empty());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", p.path().join("etc")).expect("symlink");
            assert!(complete(p.path(), "etc/pa", 10).is_empty());
        }
    }
}
