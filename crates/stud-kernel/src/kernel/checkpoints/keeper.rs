//! A session's checkpoints: the snapshot before a turn's first change,
//! the one when it ends, the journal entry that ties them to the turn,
//! and the restores (`/undo`, `/rewind`) planned and carried out from
//! them. Everything here is blocking file work; the session calls it off
//! its async threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::capture::{Coverage, Entry, Limits, Snapshot, take_covering};
use super::journal::{Journal, Kind, Record, standing};
use super::objects::Objects;
use super::restore::{Change, restore};

/// `checkpoints.*` settings as the kernel uses them.
#[derive(Debug, Clone)]
pub struct CheckpointSettings {
    pub enabled: bool,
    pub limits: Limits,
    pub include_ignored: bool,
    /// Journals untouched this long are pruned, with the contents only
    /// they kept.
    pub keep_days: u64,
    /// In a git repository, keep each snapshot as an unreferenced commit
    /// too.
    pub git_commits: bool,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            enabled: true,
            limits: Limits::default(),
            include_ignored: false,
            keep_days: 30,
            git_commits: true,
        }
    }
}

impl CheckpointSettings {
    /// The settings' `checkpoints.*` over the defaults.
    pub fn from_config(s: &crate::config::Checkpoints) -> Self {
        let d = CheckpointSettings::default();
        let mib =
            |v: Option<u64>, default: u64| v.map_or(default, |m| m.saturating_mul(1024 * 1024));
        CheckpointSettings {
            enabled: s.enabled.unwrap_or(d.enabled),
            limits: Limits {
                max_file_bytes: mib(s.max_file_mib, d.limits.max_file_bytes),
                max_new_bytes: mib(s.max_snapshot_mib, d.limits.max_new_bytes),
            },
            include_ignored: s.include_ignored.unwrap_or(d.include_ignored),
            keep_days: s.keep_days.unwrap_or(d.keep_days),
            git_commits: s.git_commits.unwrap_or(d.git_commits),
        }
    }

    /// The person's `checkpoints.*` as a session in `project` reads them:
    /// the layered settings of the stud home at `home` (every
    /// `checkpoints.*` key is global only, so in effect the global file).
    /// For what opens a session's checkpoints without running it
    /// (`stud session rewind`, a replay's copy).
    pub fn of_person(home: &Path, project: &Path) -> Result<Self, String> {
        let home = crate::paths::StudHome::at(home);
        let scope = crate::extensions::trust::recorded_scope(home.root(), project);
        let layered =
            crate::config::Layered::load(&home.settings_file(), scope.settings_layer().as_ref())
                .map_err(|e| e.to_string())?;
        Ok(Self::from_config(&layered.settings.checkpoints))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint {what} failed: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the checkpoint snapshot {0} is unreadable; its turn cannot be restored")]
    Unreadable(String),
    #[error("nothing to undo: no turn of this session changed a file (or all were undone)")]
    NothingToUndo,
    #[error("this session has no turn {0} (see /rewind or `stud session show`)")]
    NoSuchTurn(u64),
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> CheckpointError {
    move |source| CheckpointError::Io { what, source }
}

/// Where one project's checkpoints live in the stud home.
pub fn project_dir(home: &Path, project: &Path) -> PathBuf {
    let project = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    let key = hex::encode(&Sha256::digest(project.as_os_str().as_encoded_bytes())[..8]);
    home.join("checkpoints").join(key)
}

/// The journal of session `id` of `project`.
pub fn journal_of(home: &Path, project: &Path, id: &str) -> Journal {
    Journal::at(
        project_dir(home, project)
            .join("sessions")
            .join(format!("{id}.jsonl")),
    )
}

pub struct Checkpoints {
    /// `<home>/checkpoints/<project key>`.
    dir: PathBuf,
    keep_days: u64,
    project: PathBuf,
    objects: Objects,
    journal: Journal,
    limits: Limits,
    coverage: Coverage,
    /// In a git repository: where each snapshot's commit goes.
    git: Option<Arc<super::git_form::GitObjects>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The newest snapshot: what the next one need not read again.
    last: Option<(String, Arc<Snapshot>)>,
    open: Option<OpenTurn>,
    next_seq: Option<u64>,
}

struct OpenTurn {
    turn: u64,
    prompt: String,
    history_len: usize,
    before: Option<(String, Arc<Snapshot>)>,
    /// The git commit of `before`, made on a thread of its own so the
    /// turn does not wait for it.
    before_commit: Option<std::thread::JoinHandle<Option<String>>>,
}

/// A restore made ready: what it puts back, and what it would overwrite
/// that changed since.
#[derive(Debug, Clone)]
pub struct RestorePlan {
    /// The journal entries it takes back.
    pub undid: Vec<u64>,
    /// "turn 3 (“fix the tests”)".
    pub what: String,
    pub changes: Vec<Change>,
    /// One line per file: what happens to it, with a line count.
    pub lines: Vec<String>,
    /// Files that changed since the turn (by the person, another program):
    /// not overwritten unless asked.
    pub conflicts: Vec<String>,
    /// Files whose old content was too large to keep.
    pub unkept: Vec<String>,
    /// For a conversation rewind: the messages to keep, and the digest the
    /// first dropped one must have.
    pub history: Option<(usize, Option<String>)>,
    /// Each changed path as the turns left it (`None`: they removed it):
    /// what the file must still be for the restore to write over it
    /// without being told to overwrite. Checked when the plan is made
    /// (`conflicts`) and again when it is carried out.
    pub expected: BTreeMap<String, Option<Entry>>,
}

/// What carrying out a plan did.
#[derive(Debug, Clone, Default)]
pub struct Carried {
    /// The restore's journal entry; `None` when nothing was put back.
    pub record: Option<Record>,
    /// Files kept as they are because they changed since the turn, found
    /// when the restore was carried out (the plan's `conflicts`, and any
    /// changed while the question was open). Empty with `overwrite`.
    pub kept: Vec<String>,
}

impl RestorePlan {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

impl Checkpoints {
    pub fn open(home: &Path, project: &Path, session_id: &str, s: &CheckpointSettings) -> Self {
        let dir = project_dir(home, project);
        let home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
        let root = project
            .canonicalize()
            .unwrap_or_else(|_| project.to_path_buf());
        Checkpoints {
            objects: Objects::at(dir.join("objects")),
            dir,
            keep_days: s.keep_days,
            journal: journal_of(&home, &root, session_id),
            project: root.clone(),
            limits: s.limits,
            coverage: Coverage {
                include_ignored: s.include_ignored,
                exclude: home.starts_with(&root).then_some(home),
            },
            git: s
                .git_commits
                .then(|| super::git_form::GitObjects::of_work_tree(&root).map(Arc::new))
                .flatten(),
            state: Mutex::new(State::default()),
        }
    }

    /// Prune old journals and what only they kept (`checkpoints.keepDays`)
    /// on a thread of its own: a session does not wait for it. The thread
    /// is started only when a prune is due (once a day): every start
    /// started one before, right before its first request, to find the
    /// marker recent and end.
    pub fn prune_in_background(&self) {
        if !super::retention::due(&self.dir) {
            return;
        }
        let (dir, days, keep) = (
            self.dir.clone(),
            self.keep_days,
            self.journal.path().to_path_buf(),
        );
        let _ = std::thread::Builder::new()
            .name("checkpoint-prune".into())
            .spawn(move || {
                if let Err(e) = super::retention::prune(&dir, days, &keep, false) {
                    tracing::warn!("pruning checkpoints in {}: {e}", dir.display());
                }
            });
    }

    pub fn project(&self) -> &Path {
        &self.project
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A turn began; its snapshot waits for its first change.
    pub fn turn_opened(&self, turn: u64, prompt: &str, history_len: usize) {
        self.lock().open = Some(OpenTurn {
            turn,
            prompt: prompt.chars().take(200).collect(),
            history_len,
            before: None,
            before_commit: None,
        });
    }

    /// Where the open turn's messages start.
    pub fn open_history_len(&self) -> Option<usize> {
        self.lock().open.as_ref().map(|o| o.history_len)
    }

    /// Before a call that may write: the tree as it is, once per turn.
    /// Returns whether a snapshot was taken now.
    pub fn before_change(&self) -> Result<bool, CheckpointError> {
        let mut state = self.lock();
        match &state.open {
            Some(open) if open.before.is_none() => {}
            _ => return Ok(false),
        }
        let taken = self.snapshot(&mut state)?;
        let commit = self.git.clone().map(|git| {
            let (store, snap, message) =
                (self.objects.clone(), taken.1.clone(), self.commit_message());
            std::thread::spawn(move || {
                super::git_form::commit(&git, &store, &snap, &message)
                    .inspect_err(|e| tracing::warn!("checkpoint commit: {e}"))
                    .ok()
            })
        });
        if let Some(open) = state.open.as_mut() {
            open.before = Some(taken);
            open.before_commit = commit;
        }
        Ok(true)
    }

    fn commit_message(&self) -> String {
        format!(
            "stud checkpoint\n\nThe project's files as they were, kept by stud for /undo and /rewind\n({}).",
            self.journal.path().display()
        )
    }

    /// The turn ended: the tree after it, and its journal entry.
    /// `first_message` is the digest of the turn's first message.
    pub fn turn_closed(&self, first_message: Option<String>) -> Result<Record, CheckpointError> {
        let mut state = self.lock();
        let Some(open) = state.open.take() else {
            return Err(CheckpointError::Io {
                what: "journal",
                source: std::io::Error::other("no turn is open"),
            });
        };
        let (before, after, changed, skipped) = match &open.before {
            Some((bd, b)) => {
                let (ad, a) = self.snapshot(&mut state)?;
                let changed = differing(b, &a);
                // What the turn changed whose old content was not kept:
                // the files /undo cannot put back.
                let skipped = b
                    .skipped
                    .iter()
                    .filter(|line| changed.iter().any(|p| line.starts_with(&format!("{p}: "))))
                    .cloned()
                    .collect();
                (Some(bd.clone()), Some(ad), changed, skipped)
            }
            None => (None, None, Vec::new(), Vec::new()),
        };
        let commit = open.before_commit.and_then(|h| h.join().ok()).flatten();
        let record = Record {
            seq: self.next_seq(&mut state),
            kind: Kind::Turn,
            turn: open.turn,
            prompt: open.prompt,
            history_len: open.history_len,
            first_message,
            at_ms: super::super::events::now_ms(),
            before,
            after,
            changed,
            skipped,
            commit,
        };
        self.journal.append(&record).map_err(io("journal"))?;
        Ok(record)
    }

    pub fn records(&self) -> Vec<Record> {
        self.journal.read()
    }

    /// The next journal position: read from the journal once, then counted
    /// (the caller holds the state lock, so appends are in order).
    fn next_seq(&self, state: &mut State) -> u64 {
        let seq = *state
            .next_seq
            .get_or_insert_with(|| self.journal.read().last().map_or(1, |r| r.seq + 1));
        state.next_seq = Some(seq + 1);
        seq
    }

    /// Take a snapshot, keeping unchanged entries of the last one; stored
    /// (as an object of its own) unless it is the last one again.
    fn snapshot(&self, state: &mut State) -> Result<(String, Arc<Snapshot>), CheckpointError> {
        if state.last.is_none() {
            state.last = self.newest_recorded();
        }
        let previous = state.last.as_ref().map(|(_, s)| s.as_ref());
        let snap = take_covering(
            &self.project,
            &self.objects,
            previous,
            self.limits,
            &self.coverage,
        )
        .map_err(io("snapshot"))?;
        if let Some((digest, last)) = &state.last
            && last.same_tree(&snap)
        {
            return Ok((digest.clone(), last.clone()));
        }

        let bytes = serde_json::to_vec(&snap).map_err(|e| CheckpointError::Io {
            what: "snapshot",
            source: std::io::Error::other(e),
        })?;
        let digest = self.objects.put(&bytes).map_err(io("snapshot"))?;
        let snap = Arc::new(snap);
        state.last = Some((digest.clone(), snap.clone()));
        Ok((digest, snap))
    }

    /// The newest snapshot this session's journal names (a resumed
    /// session's stat cache).
    fn newest_recorded(&self) -> Option<(String, Arc<Snapshot>)> {
        let digest = self
            .journal
            .read()
            .into_iter()
            .rev()
            .find_map(|r| r.after)?;
        let snap = self.load(&digest).ok()?;
        Some((digest, snap))
    }

    fn load(&self, digest: &str) -> Result<Arc<Snapshot>, CheckpointError> {
        let bytes = self
            .objects
            .get(digest)
            .map_err(|_| CheckpointError::Unreadable(digest.to_string()))?;
        serde_json::from_slice(&bytes)
            .map(Arc::new)
            .map_err(|_| CheckpointError::Unreadable(digest.to_string()))
    }

    /// `/undo`: the newest entry whose changes stand, taken back.
    pub fn plan_undo(&self) -> Result<RestorePlan, CheckpointError> {
        let records = self.records();
        let last = standing(&records)
            .into_iter()
            .find(|r| !r.changed.is_empty())
            .cloned()
            .ok_or(CheckpointError::NothingToUndo)?;
        let what = describe(&last);
        self.plan(std::slice::from_ref(&last), vec![last.seq], what, None)
    }

    /// `/rewind`: every change since turn `turn` began taken back (files
    /// as they were before it), and where its conversation started.
    pub fn plan_rewind(&self, turn: u64) -> Result<RestorePlan, CheckpointError> {
        let records = self.records();
        let start = records
            .iter()
            .rev()
            .find(|r| r.kind == Kind::Turn && r.turn == turn)
            .cloned()
            .ok_or(CheckpointError::NoSuchTurn(turn))?;
        let since: Vec<Record> = records
            .iter()
            .filter(|r| r.seq >= start.seq)
            .cloned()
            .collect();
        let undid = standing(&records)
            .into_iter()
            .filter(|r| r.seq >= start.seq && !r.changed.is_empty())
            .map(|r| r.seq)
            .collect();
        let history = Some((start.history_len, start.first_message.clone()));
        self.plan(
            &since,
            undid,
            format!("back to before {}", describe(&start)),
            history,
        )
    }

    /// What putting back every path `records` changed needs: each path as
    /// it was before the first of them changed it, checked against what
    /// the last of them left.
    fn plan(
        &self,
        records: &[Record],
        undid: Vec<u64>,
        what: String,
        history: Option<(usize, Option<String>)>,
    ) -> Result<RestorePlan, CheckpointError> {
        let mut target: BTreeMap<String, String> = BTreeMap::new();
        let mut expected: BTreeMap<String, String> = BTreeMap::new();
        for r in records {
            let (Some(b), Some(a)) = (&r.before, &r.after) else {
                continue;
            };
            for p in &r.changed {
                target.entry(p.clone()).or_insert_with(|| b.clone());
                expected.insert(p.clone(), a.clone());
            }
        }
        let mut loaded: BTreeMap<String, Arc<Snapshot>> = BTreeMap::new();
        let mut get = |d: &str| -> Result<Arc<Snapshot>, CheckpointError> {
            if let Some(s) = loaded.get(d) {
                return Ok(s.clone());
            }
            let s = self.load(d)?;
            loaded.insert(d.to_string(), s.clone());
            Ok(s)
        };
        let now = {
            let mut state = self.lock();
            self.snapshot(&mut state)?.1
        };
        let mut plan = RestorePlan {
            undid,
            what,
            changes: Vec::new(),
            lines: Vec::new(),
            conflicts: Vec::new(),
            unkept: Vec::new(),
            history,
            expected: BTreeMap::new(),
        };
        for (path, t) in &target {
            let then = get(t)?.files.get(path).cloned();
            let left = get(&expected[path])?.files.get(path).cloned();
            let cur = now.files.get(path);
            if same(then.as_ref(), cur) {
                continue;
            }
            if !same(left.as_ref(), cur) {
                plan.conflicts.push(path.clone());
            }
            let change = match &then {
                Some(Entry {
                    digest: Some(d),
                    mode,
                    ..
                }) => Change::Write {
                    path: path.clone(),
                    digest: d.clone(),
                    mode: *mode,
                },
                Some(_) => {
                    plan.unkept.push(path.clone());
                    Change::Unkept { path: path.clone() }
                }
                None => Change::Remove { path: path.clone() },
            };
            plan.lines.push(self.line(&change, cur));
            plan.changes.push(change);
            plan.expected.insert(path.clone(), left);
        }
        Ok(plan)
    }

    /// One file's line in the question: what happens and how many lines.
    fn line(&self, change: &Change, cur: Option<&Entry>) -> String {
        match change {
            Change::Remove { path } => format!("{path}: removed (it was made since)"),
            Change::Unkept { path } => {
                format!(
                    "{path}: cannot be put back (too large to keep when the snapshot was taken)"
                )
            }
            Change::Write { path, digest, mode } => {
                let Some(cur) = cur else {
                    return format!("{path}: put back (it was removed since)");
                };
                if cur.digest.as_deref() == Some(digest) {
                    return format!("{path}: mode back to {mode:o}");
                }
                let old = self.objects.get(digest).ok();
                let new = std::fs::read(self.project.join(path)).ok();
                match (old, new) {
                    (Some(old), Some(new)) => {
                        match (std::str::from_utf8(&old), std::str::from_utf8(&new)) {
                            (Ok(old), Ok(new)) => {
                                let (plus, minus) = line_counts(new, old);
                                format!("{path}: put back (+{plus} -{minus} lines)")
                            }
                            _ => format!("{path}: put back (binary)"),
                        }
                    }
                    _ => format!("{path}: put back"),
                }
            }
        }
    }

    /// Carry `plan` out. Every file is checked again against what the
    /// turns left (as when the plan was made): one changed since (before
    /// the question, or while it was open) is overwritten only when
    /// `overwrite` says so, else kept as it is and named in `kept`. The
    /// restore is a journal entry of its own (so it can be undone),
    /// returned; `None` when nothing was left to put back.
    pub fn carry_out(
        &self,
        plan: &RestorePlan,
        overwrite: bool,
    ) -> Result<Carried, CheckpointError> {
        let mut state = self.lock();
        let (bd, b) = self.snapshot(&mut state)?;
        let mut kept = Vec::new();
        let mut changes = Vec::new();
        for change in &plan.changes {
            let path = change_path(change);
            let now = b.files.get(path);
            let done = match change {
                Change::Write { digest, mode, .. } => now.is_some_and(|e| {
                    e.digest.as_deref() == Some(digest.as_str()) && e.mode == *mode
                }),
                Change::Remove { .. } => now.is_none(),
                Change::Unkept { .. } => true,
            };
            if done {
                continue;
            }
            let left = plan.expected.get(path).and_then(Option::as_ref);
            if !overwrite && !same(left, now) {
                kept.push(path.to_string());
                continue;
            }
            changes.push(change.clone());
        }
        if changes.is_empty() {
            return Ok(Carried { record: None, kept });
        }
        restore(&self.project, &self.objects, &changes).map_err(io("restore"))?;
        let (ad, a) = self.snapshot(&mut state)?;
        let commit = self.git.as_ref().and_then(|git| {
            super::git_form::commit(git, &self.objects, &b, &self.commit_message()).ok()
        });
        let record = Record {
            seq: self.next_seq(&mut state),
            kind: Kind::Restore {
                undid: plan.undid.clone(),
            },
            turn: 0,
            prompt: plan.what.clone(),
            history_len: 0,
            first_message: None,
            at_ms: super::super::events::now_ms(),
            before: Some(bd),
            after: Some(ad),
            changed: differing(&b, &a),
            skipped: Vec::new(),
            commit,
        };
        self.journal.append(&record).map_err(io("journal"))?;
        Ok(Carried {
            record: Some(record),
            kept,
        })
    }
}

impl Checkpoints {
    /// Put the files of `plan` back under `root` (a copy of the project),
    /// whatever they are there now: a replay's throwaway copy of the
    /// project as it was before the session's first change.
    pub fn restore_into(&self, plan: &RestorePlan, root: &Path) -> Result<(), CheckpointError> {
        let changes: Vec<Change> = plan
            .changes
            .iter()
            .filter(|c| !matches!(c, Change::Unkept { .. }))
            .cloned()
            .collect();
        restore(root, &self.objects, &changes).map_err(io("restore"))
    }
}

/// "turn 3 (“the prompt”)", or what a restore did.
pub fn describe(r: &Record) -> String {
    match r.kind {
        Kind::Turn => {
            let prompt: String = r.prompt.chars().take(60).collect();
            let more = if r.prompt.chars().count() > 60 {
                "…"
            } else {
                ""
            };
            format!("turn {} (\u{201c}{prompt}{more}\u{201d})", r.turn)
        }
        Kind::Restore { .. } => format!("the restore “{}”", r.prompt),
    }
}

pub fn change_path(c: &Change) -> &str {
    match c {
        Change::Write { path, .. } | Change::Remove { path } | Change::Unkept { path } => path,
    }
}

/// Two states of one path are the same file.
fn same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.mode == b.mode
                && match (&a.digest, &b.digest) {
                    (Some(x), Some(y)) => x == y,
                    _ => a.size == b.size && a.mtime_ns == b.mtime_ns,
                }
        }
        _ => false,
    }
}

/// Paths whose file differs between two snapshots.
fn differing(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    let mut out: Vec<String> = a
        .files
        .iter()
        .filter(|(p, e)| !same(Some(e), b.files.get(*p)))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(
        b.files
            .keys()
            .filter(|p| !a.files.contains_key(*p))
            .cloned(),
    );
    out.sort();
    out
}

/// Lines added and removed going from `from` to `to`.
fn line_counts(from: &str, to: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(from, to);
    let mut plus = 0;
    let mut minus = 0;
    for op in diff.iter_all_changes() {
        match op.tag() {
            similar::ChangeTag::Insert => plus += 1,
            similar::ChangeTag::Delete => minus += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (plus, minus)
}

/// A message's digest, to tell later that the history still holds it at
/// the same place.
pub fn message_digest(m: &crate::runtime::domain::Message) -> String {
    let json = crate::kernel::payloads::message_json(m).to_string();
    hex::encode(Sha256::digest(json.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(c: &Checkpoints, n: u64, work: impl FnOnce()) -> Record {
        c.turn_opened(n, &format!("prompt {n}"), 0);
        c.before_change().expect("snapshot");
        work();
        c.turn_closed(None).expect("close")
    }

    #[test]
    fn undo_is_undoable_and_rewind_goes_back_across_turns() {
        let home = tempfile::tempdir().expect("h");
        let project = tempfile::tempdir().expect("p");
        let p = project.path().to_path_buf();
        std::fs::write(p.join("a.txt"), "one\n").expect("w");
        let c = Checkpoints::open(home.path(), &p, "s1", &CheckpointSettings::default());
        let t1 = turn(&c, 1, || {
            std::fs::write(p.join("a.txt"), "two\n").expect("w")
        });
        assert_eq!(t1.changed, vec!["a.txt"]);
        let t2 = turn(&c, 2, || {
            std::fs::write(p.join("b.txt"), "new\n").expect("w")
        });
        assert_eq!(t2.changed, vec!["b.txt"]);
        // Undo takes back turn 2 only.
        let undo = c.plan_undo().expect("plan");
        assert_eq!(undo.lines, vec!["b.txt: removed (it was made since)"]);
        c.carry_out(&undo, false).expect("undo");
        assert!(!p.join("b.txt").exists());
        // The undo is undone: b.txt is back.
        let redo = c.plan_undo().expect("plan");
        c.carry_out(&redo, false).expect("redo");
        assert_eq!(
            std::fs::read_to_string(p.join("b.txt")).expect("r"),
            "new\n"
        );
        // Rewind to before turn 1: both turns taken back.
        let rewind = c.plan_rewind(1).expect("plan");
        assert_eq!(rewind.lines.len(), 2, "{:?}", rewind.lines);
        assert!(
            rewind
                .lines
                .contains(&"a.txt: put back (+1 -1 lines)".to_string())
        );
        c.carry_out(&rewind, false).expect("rewind");
        assert_eq!(
            std::fs::read_to_string(p.join("a.txt")).expect("r"),
            "one\n"
        );
        assert!(!p.join("b.txt").exists());
    }

    #[test]
    fn a_file_changed_since_the_turn_is_reported_and_kept() {
        let home = tempfile::tempdir().expect("h");
        let project = tempfile::tempdir().expect("p");
        let p = project.path().to_path_buf();
        std::fs::write(p.join("a.txt"), "one\n").expect("w");
        let c = Checkpoints::open(home.path(), &p, "s1", &CheckpointSettings::default());
        turn(&c, 1, || {
            std::fs::write(p.join("a.txt"), "two\n").expect("w")
        });
        // The person edits it after the turn.
        std::fs::write(p.join("a.txt"), "mine\n").expect("w");
        let plan = c.plan_undo().expect("plan");
        assert_eq!(plan.conflicts, vec!["a.txt"]);
        let done = c.carry_out(&plan, false).expect("undo");
        assert_eq!(done.kept, vec!["a.txt"]);
        assert!(done.record.is_none());
        assert_eq!(
            std::fs::read_to_string(p.join("a.txt")).expect("r"),
            "mine\n"
        );
        let done = c
            .carry_out(&c.plan_undo().expect("plan"), true)
            .expect("undo");
        assert!(done.kept.is_empty());
        assert_eq!(
            std::fs::read_to_string(p.join("a.txt")).expect("r"),
            "one\n"
        );
    }

    /// What opens a session's checkpoints without running it reads the
    /// person's `checkpoints.*` (a project's values are ignored).
    #[test]
    fn the_persons_checkpoint_settings_are_read_from_the_home() {
        let home = tempfile::tempdir().expect("h");
        let project = tempfile::tempdir().expect("p");
        let defaults = CheckpointSettings::of_person(home.path(), project.path()).expect("none");
        assert!(defaults.git_commits && !defaults.include_ignored);
        std::fs::write(
            home.path().join("settings.json"),
            r#"{"checkpoints": {"gitCommits": false, "includeIgnored": true, "maxFileMiB": 1, "keepDays": 3}}"#,
        )
        .expect("w");
        let s = CheckpointSettings::of_person(home.path(), project.path()).expect("read");
        assert!(!s.git_commits && s.include_ignored && s.enabled);
        assert_eq!(s.limits.max_file_bytes, 1024 * 1024);
        assert_eq!(s.keep_days, 3);
        assert_eq!(
            s.limits.max_new_bytes,
            CheckpointSettings::default().limits.max_new_bytes
        );
    }

    /// With `overwrite`, a file changed while the question was open is
    /// put back too.
    #[test]
    fn overwrite_covers_a_file_changed_while_the_question_is_open() {
        let home = tempfile::tempdir().expect("h");
        let project = tempfile::tempdir().expect("p");
        let p = project.path().to_path_buf();
        std::fs::write(p.join("a.txt"), "one\n").expect("w");
        let c = Checkpoints::open(home.path(), &p, "s1", &CheckpointSettings::default());
        turn(&c, 1, || {
            std::fs::write(p.join("a.txt"), "two\n").expect("w")
        });
        let plan = c.plan_undo().expect("plan");
        std::fs::write(p.join("a.txt"), "mine\n").expect("w");
        let done = c.carry_out(&plan, true).expect("undo");
        assert!(done.kept.is_empty());
        assert_eq!(
            std::fs::read_to_string(p.join("a.txt")).expect("r"),
            "one\n"
        );
    }

    /// The question is open (the plan made) when the person edits a file
    /// the plan would put back: carrying it out keeps that file.
    #[test]
    fn a_file_changed_while_the_question_is_open_is_kept() {
        let home = tempfile::tempdir().expect("h");
        let project = tempfile::tempdir().expect("p");
        let p = project.path().to_path_buf();
        std::fs::write(p.join("a.txt"), "one\n").expect("w");
        std::fs::write(p.join("b.txt"), "one\n").expect("w");
        let c = Checkpoints::open(home.path(), &p, "s1", &CheckpointSettings::default());
        turn(&c, 1, || {
            std::fs::write(p.join("a.txt"), "two\n").expect("w");
            std::fs::write(p.join("b.txt"), "two\n").expect("w");
        });
        let plan = c.plan_undo().expect("plan");
        assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
        // Meanwhile, the person saves a.txt.
        std::fs::write(p.join("a.txt"), "mine, longer\n").expect("w");
        let done = c.carry_out(&plan, false).expect("undo");
        assert_eq!(done.kept, vec!["a.txt"]);
        let record = done.record.expect("b.txt restored");
        assert_eq!(record.changed, vec!["b.txt"]);
        assert_eq!(
            std::fs::read_to_string(p.join("a.txt")).expect("r"),
            "mine, longer\n"
        );
        assert_eq!(
            std::fs::read_to_string(p.join("b.txt")).expect("r"),
            "one\n"
        );
    }
}
