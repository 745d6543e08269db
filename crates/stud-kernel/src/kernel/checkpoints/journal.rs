//! A session's checkpoint journal: one JSON line per turn (its prompt,
//! where its messages start, the snapshots before and after it, the files
//! it changed) and per restore (`/undo`, `/rewind`). Restores are entries
//! too, so an undo can be undone.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Kind {
    /// A turn of the session.
    Turn,
    /// Files put back by `/undo` or `/rewind`: the entries (`seq`) it
    /// took back.
    Restore { undid: Vec<u64> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Position in the journal, from 1.
    pub seq: u64,
    #[serde(flatten)]
    pub kind: Kind,
    /// The session's turn number (0 for a restore).
    pub turn: u64,
    /// What the person asked (a restore: what it did).
    pub prompt: String,
    /// Messages in the history before the turn: a conversation rewind
    /// keeps this many.
    pub history_len: usize,
    /// The digest of the turn's first message, so a rewind can tell that
    /// the history still lines up (a compaction since moves it).
    #[serde(default)]
    pub first_message: Option<String>,
    pub at_ms: u64,
    /// The tree before the first change (`None`: nothing could write).
    #[serde(default)]
    pub before: Option<String>,
    /// The tree when the turn ended.
    #[serde(default)]
    pub after: Option<String>,
    /// Project-relative paths that differ between the two.
    #[serde(default)]
    pub changed: Vec<String>,
    /// Files the turn changed whose old content the snapshot could not
    /// keep (too large, over the bound), and why.
    #[serde(default)]
    pub skipped: Vec<String>,
    /// In a git repository, the unreferenced commit of the tree before
    /// (`git diff <commit>` shows what changed since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl Record {
    pub fn is_restore(&self) -> bool {
        matches!(self.kind, Kind::Restore { .. })
    }
}

/// A session's journal file.
#[derive(Debug, Clone)]
pub struct Journal {
    file: PathBuf,
}

impl Journal {
    pub fn at(file: impl Into<PathBuf>) -> Self {
        Journal { file: file.into() }
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Every entry, oldest first; a torn last line (a crash mid-append) is
    /// skipped.
    pub fn read(&self) -> Vec<Record> {
        std::fs::read_to_string(&self.file)
            .map(|t| {
                t.lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Add one entry (one write of one line, flushed to disk).
    pub fn append(&self, record: &Record) -> std::io::Result<()> {
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)?;
        // After a torn line (a crash mid-append), start a fresh one.
        if !ends_with_newline(&self.file)? {
            line.insert(0, '\n');
        }
        f.write_all(line.as_bytes())?;
        f.sync_data()
    }
}

fn ends_with_newline(file: &Path) -> std::io::Result<bool> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut f = std::fs::File::open(file)?;
    if f.metadata()?.len() == 0 {
        return Ok(true);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// The entries whose changes stand: newest first, an entry a standing
/// restore took back does not (and what a taken-back restore undid stands
/// again).
pub fn standing(records: &[Record]) -> Vec<&Record> {
    let mut undone = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for r in records.iter().rev() {
        if undone.contains(&r.seq) {
            continue;
        }
        if let Kind::Restore { undid } = &r.kind {
            undone.extend(undid.iter().copied());
        }
        out.push(r);
    }
    out
}

#[cfg(test)]
impl Record {
    /// Turn `seq`'s entry with the trees before and after it, nothing else.
    pub(crate) fn test_turn(seq: u64, before: Option<String>, after: Option<String>) -> Record {
        Record {
            seq,
            kind: Kind::Turn,
            turn: seq,
            prompt: String::new(),
            history_len: 0,
            first_message: None,
            at_ms: 0,
            before,
            after,
            changed: vec![],
            skipped: vec![],
            commit: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, kind: Kind) -> Record {
        Record {
            kind,
            changed: vec!["a".into()],
            ..Record::test_turn(seq, None, None)
        }
    }

    #[test]
    fn an_undone_undo_lets_its_turn_stand_again() {
        let t1 = rec(1, Kind::Turn);
        let u = rec(2, Kind::Restore { undid: vec![1] });
        let seqs = |v: Vec<&Record>| v.iter().map(|r| r.seq).collect::<Vec<_>>();
        assert_eq!(seqs(standing(&[t1.clone(), u.clone()])), vec![2]);
        let uu = rec(3, Kind::Restore { undid: vec![2] });
        assert_eq!(seqs(standing(&[t1, u, uu])), vec![3, 1]);
    }

    #[test]
    fn a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().expect("tmp");
        let j = Journal::at(dir.path().join("s.jsonl"));
        j.append(&rec(1, Kind::Turn)).expect("append");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(j.path())
            .expect("open");
        f.write_all(br#"{"seq":2,"kind":"tu"#).expect("w");
        assert_eq!(j.read().len(), 1);
        j.append(&rec(3, Kind::Turn)).expect("append");
        assert_eq!(
            j.read().iter().map(|r| r.seq).collect::<Vec<_>>(),
            vec![1, 3]
        );
        let line = std::fs::read_to_string(j.path()).expect("read");
        assert!(line.starts_with(r#"{"seq":1,"kind":"turn""#), "{line}");
    }
}
