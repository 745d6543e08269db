//! A skill's files (`scripts/`, `references/`, `assets/` and the rest),
//! listed and read on the model's request under the `read` tool's rules:
//! only inside the skill's folder (no `..`, no absolute path, no link out
//! of it), regular files, text, at most 256 KiB, with line numbers; what
//! the protected-path defaults cover (`.env`, keys) is neither listed nor
//! read. Scripts are not run here: the model runs them with `bash`, which
//! the authority stack decides.

use std::io::Read as _;
use std::path::{Component, Path};

use crate::protected_paths::ProtectedPaths;

/// What `read` reads whole.
const MAX_BYTES: u64 = 256 * 1024;
/// Files listed from one skill.
const MAX_LISTED: usize = 200;

/// The skill's files besides `SKILL.md`, relative and sorted.
pub fn list(folder: &Path) -> Vec<String> {
    let protected = ProtectedPaths::default();
    let mut out: Vec<String> = ignore::WalkBuilder::new(folder)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(Some(6))
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            let rel = e
                .path()
                .strip_prefix(folder)
                .ok()?
                .to_str()?
                .replace('\\', "/");
            (rel != "SKILL.md" && protected.protecting(&rel).is_none()).then_some(rel)
        })
        .take(MAX_LISTED)
        .collect();
    out.sort();
    out
}

/// The file `rel` of the skill in `folder`, numbered as `read` numbers
/// lines, or why not.
pub fn read(folder: &Path, rel: &str) -> Result<String, String> {
    let path = Path::new(rel);
    if rel.is_empty()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "`{rel}` is not a file of the skill; give a path inside its folder, as listed"
        ));
    }
    if let Some(pattern) = ProtectedPaths::default().protecting(rel) {
        return Err(format!(
            "`{rel}` is protected (`{pattern}`); it is not read"
        ));
    }
    let root = folder.canonicalize().map_err(|e| e.to_string())?;
    let real = root
        .join(path)
        .canonicalize()
        .map_err(|_| format!("the skill has no file `{rel}`"))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "`{rel}` leads out of the skill's folder; it is not read"
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(format!("`{rel}` is not a regular file"));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "`{rel}` is {} bytes (over {MAX_BYTES})",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .and_then(|f| f.take(MAX_BYTES).read_to_end(&mut bytes))
        .map_err(|e| format!("`{rel}`: {e}"))?;
    if bytes.iter().take(8000).any(|b| *b == 0) {
        return Err(format!("`{rel}` looks binary; only text files are read"));
    }
    let text = String::from_utf8_lossy(&bytes);
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_inside_are_listed_and_read_and_nothing_else() {
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("secret.txt"), "top secret").expect("write");
        let dir = tempfile::tempdir().expect("skill");
        let s = dir.path();
        std::fs::create_dir_all(s.join("scripts")).expect("mkdir");
        std::fs::write(s.join("SKILL.md"), "---\nname: x\ndescription: y\n---\n").expect("w");
        std::fs::write(s.join("scripts/run.py"), "print('hi')\n").expect("w");
        std::fs::write(s.join(".env"), "KEY=1").expect("w");
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), s.join("link.txt"))
            .expect("symlink");
        let listed = list(s);
        assert!(listed.contains(&"scripts/run.py".to_string()), "{listed:?}");
        assert!(
            !listed.iter().any(|l| l == ".env" || l == "SKILL.md"),
            "{listed:?}"
        );
        assert_eq!(
            read(s, "scripts/run.py").expect("read"),
            "     1\tprint('hi')\n"
        );
        for bad in [
            "../secret.txt",
            "/etc/passwd",
            ".env",
            "scripts",
            "missing.md",
        ] {
            assert!(read(s, bad).is_err(), "{bad} was read");
        }
        #[cfg(unix)]
        assert!(
            read(s, "link.txt")
                .unwrap_err()
                .contains("out of the skill")
        );
    }
}
