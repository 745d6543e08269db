//! What the person typed, kept per project across sessions for Up/Down
//! and Ctrl-R in the full-screen UI. One JSON line per input in
//! `<stud home>/history/<project key>.jsonl`, readable by the person
//! only: prompts can hold what they would not show others.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The most entries a UI gets.
pub const KEPT: usize = 1000;

#[derive(Serialize, Deserialize)]
struct Entry {
    text: String,
    /// Unix time in milliseconds.
    at: u64,
}

#[derive(Debug, Clone)]
pub struct InputHistory {
    file: PathBuf,
}

impl InputHistory {
    /// The history of the project in `cwd`.
    pub fn for_project(home: &Path, cwd: &Path) -> Self {
        let project = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let key = hex::encode(&Sha256::digest(project.as_os_str().as_encoded_bytes())[..8]);
        InputHistory {
            file: home.join("history").join(format!("{key}.jsonl")),
        }
    }

    /// The last [`KEPT`] inputs, oldest first; a line that does not parse
    /// is skipped. A file twice that long is cut back.
    pub fn load(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return Vec::new();
        };
        let all: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
            .map(|e| e.text)
            .collect();
        let kept = all[all.len().saturating_sub(KEPT)..].to_vec();
        if all.len() > 2 * KEPT {
            let _ = self.rewrite(&kept);
        }
        kept
    }

    /// Add one input, unless it repeats the last one or is blank.
    pub fn append(&self, text: &str) {
        if text.trim().is_empty() || self.load().last().is_some_and(|l| l == text) {
            return;
        }
        let _ = self.write_lines(&[text.to_string()], true);
    }

    fn rewrite(&self, texts: &[String]) -> std::io::Result<()> {
        self.write_lines(texts, false)
    }

    fn write_lines(&self, texts: &[String], append: bool) -> std::io::Result<()> {
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true);
        if append {
            options.append(true);
        } else {
            options.write(true).truncate(true);
        }
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&self.file)?;
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut out = String::new();
        for text in texts {
            let line = serde_json::to_string(&Entry {
                text: text.clone(),
                at,
            })
            .map_err(std::io::Error::other)?;
            out.push_str(&line);
            out.push('\n');
        }
        file.write_all(out.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_kept_per_project_oldest_first() {
        let home = tempfile::tempdir().expect("tempdir");
        let (a, b) = (
            tempfile::tempdir().expect("a"),
            tempfile::tempdir().expect("b"),
        );
        let ha = InputHistory::for_project(home.path(), a.path());
        ha.append("first");
        ha.append("second\nwith two lines");
        ha.append("second\nwith two lines");
        ha.append("  ");
        assert_eq!(ha.load(), ["first", "second\nwith two lines"]);
        assert!(
            InputHistory::for_project(home.path(), b.path())
                .load()
                .is_empty()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&ha.file)
                .expect("file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "history readable by others: {mode:o}");
        }
    }

    #[test]
    fn a_long_history_is_cut_back_and_bad_lines_are_skipped() {
        let home = tempfile::tempdir().expect("tempdir");
        let h = InputHistory::for_project(home.path(), home.path());
        let texts: Vec<String> = (0..2 * KEPT + 5).map(|i| format!("input {i}")).collect();
        h.write_lines(&texts, true).expect("write");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&h.file)
            .and_then(|mut f| f.write_all(b"not json\n"))
            .expect("append junk");
        let loaded = h.load();
        assert_eq!(loaded.len(), KEPT);
        assert_eq!(loaded.last().map(String::as_str), Some("input 2004"));
        let lines = std::fs::read_to_string(&h.file)
            .expect("read")
            .lines()
            .count();
        assert_eq!(lines, KEPT);
    }
}
