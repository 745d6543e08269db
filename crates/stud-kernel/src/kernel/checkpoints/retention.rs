//! `checkpoints.keepDays`: journals not written for that long go, then
//! the contents no remaining journal needs. An object younger than a day
//! is never swept, so one a running session has just written (and not yet
//! named in its journal) stays. Runs at most once a day per project.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::capture::Snapshot;
use super::journal::Journal;
use super::objects::Objects;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// What a prune removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub journals: usize,
    pub objects: usize,
}

/// Whether `p` was modified less than `within` ago.
fn recent(p: &Path, within: Duration) -> bool {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < within)
}

/// Whether [`prune`] (without `force`) would do anything in `dir`: it has
/// journals, and no prune ran there in the last day. Two file lookups, so
/// a start asks on its own thread and starts one for the prune only when
/// it is due (once a day, not at every start).
pub fn due(dir: &Path) -> bool {
    dir.join("sessions").is_dir() && !recent(&dir.join(".pruned"), DAY)
}

/// Prune the project checkpoint folder `dir`; `keep` is the running
/// session's journal (never removed). `force` skips the once-a-day check.
pub fn prune(dir: &Path, keep_days: u64, keep: &Path, force: bool) -> std::io::Result<Pruned> {
    let marker = dir.join(".pruned");
    if !force && recent(&marker, DAY) {
        return Ok(Pruned::default());
    }
    let mut pruned = Pruned::default();
    let keep_for = Duration::from_secs(keep_days.saturating_mul(24 * 3600));
    let mut live: HashSet<String> = HashSet::new();
    let objects = Objects::at(dir.join("objects"));
    for entry in std::fs::read_dir(dir.join("sessions"))?.filter_map(Result::ok) {
        let path = entry.path();
        if path != keep && !recent(&path, keep_for) {
            std::fs::remove_file(&path)?;
            pruned.journals += 1;
            continue;
        }
        for r in Journal::at(&path).read() {
            for digest in [r.before, r.after].into_iter().flatten() {
                if !live.insert(digest.clone()) {
                    continue;
                }
                if let Some(snap) = objects
                    .get(&digest)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok())
                {
                    live.extend(snap.files.into_values().filter_map(|e| e.digest));
                }
            }
        }
    }
    // No contents were ever kept (no turn changed a file): nothing to
    // sweep, and the marker must still be written, or every start would
    // read every journal again.
    let shards = match std::fs::read_dir(objects.root()) {
        Ok(shards) => shards,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(&marker, b"")?;
            return Ok(pruned);
        }
        Err(e) => return Err(e),
    };
    for shard in shards.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(shard.path()) else {
            continue;
        };
        let prefix = shard.file_name().to_string_lossy().to_string();
        for f in files.filter_map(Result::ok) {
            let digest = format!("{prefix}{}", f.file_name().to_string_lossy());
            if !live.contains(&digest) && !recent(&f.path(), DAY) {
                std::fs::remove_file(f.path())?;
                pruned.objects += 1;
            }
        }
    }
    std::fs::write(&marker, b"")?;
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::super::capture::{Limits, take};
    use super::super::journal::Record;
    use super::*;

    fn age(path: &Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
        let f = std::fs::File::options()
            .write(true)
            .open(path)
            .expect("open");
        f.set_modified(t).expect("mtime");
    }

    #[test]
    fn old_journals_and_the_contents_only_they_kept_are_pruned() {
        let home = tempfile::tempdir().expect("h");
        let project = tempfile::tempdir().expect("p");
        let dir = home.path();
        let objects = Objects::at(dir.join("objects"));
        let mut journals = Vec::new();
        for (name, content) in [("old", "gone"), ("new", "kept")] {
            std::fs::write(project.path().join("f.txt"), content).expect("w");
            let snap = take(project.path(), &objects, None, Limits::default()).expect("take");
            let digest = objects
                .put(&serde_json::to_vec(&snap).expect("json"))
                .expect("put");
            let j = Journal::at(dir.join("sessions").join(format!("{name}.jsonl")));
            j.append(&Record::test_turn(1, Some(digest.clone()), Some(digest)))
                .expect("append");
            journals.push((j, snap));
        }
        age(journals[0].0.path(), 40);
        // Every object is older than a day.
        for shard in std::fs::read_dir(objects.root()).expect("dir") {
            for f in std::fs::read_dir(shard.expect("e").path()).expect("dir") {
                age(&f.expect("e").path(), 2);
            }
        }
        let kept_digest = journals[1].1.files["f.txt"].digest.clone().expect("d");
        let gone_digest = journals[0].1.files["f.txt"].digest.clone().expect("d");
        let pruned = prune(dir, 30, Path::new("/none"), false).expect("prune");
        assert_eq!(pruned.journals, 1);
        assert_eq!(pruned.objects, 2, "the old content and its snapshot");
        assert!(objects.has(&kept_digest) && !objects.has(&gone_digest));
        // Once a day.
        age(journals[1].0.path(), 40);
        assert_eq!(
            prune(dir, 30, Path::new("/none"), false).expect("prune"),
            Pruned::default()
        );
    }

    /// Journals of sessions that never changed a file, and so no
    /// `objects` folder: the prune still runs once a day, not at every
    /// start (it used to fail on the missing folder before writing its
    /// marker, and read every journal again at the next start).
    #[test]
    fn a_folder_without_contents_is_pruned_once_a_day() {
        let home = tempfile::tempdir().expect("h");
        let dir = home.path();
        for name in ["old", "new"] {
            let j = Journal::at(dir.join("sessions").join(format!("{name}.jsonl")));
            j.append(&Record::test_turn(1, None, None)).expect("append");
        }
        age(&dir.join("sessions/old.jsonl"), 40);
        assert!(due(dir), "journals and no marker: due");
        let pruned = prune(dir, 30, Path::new("/none"), false).expect("prune");
        assert_eq!(pruned.journals, 1);
        assert!(dir.join(".pruned").exists(), "the marker is written");
        assert!(!due(dir), "pruned today: not due");
        age(&dir.join("sessions/new.jsonl"), 40);
        assert_eq!(
            prune(dir, 30, Path::new("/none"), false).expect("prune"),
            Pruned::default(),
            "not again the same day"
        );
        assert!(dir.join("sessions/new.jsonl").exists());
    }
}
