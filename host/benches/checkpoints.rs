//! Checkpoint benchmarks (a bench binary; numbers are printed, not
//! asserted) on a 10,000-file git repository (100 folders of 100 files,
//! 2 KiB each, committed and packed):
//! - the snapshot before a turn when nothing changed, and when 10 files
//!   changed, with the checkpoint store alone and with the git commit too;
//! - the turn's end (the snapshot after it and its journal entry);
//! - an undo of a turn that changed 10 files (plan and restore);
//! - Codex's ghost commit, the same git subprocesses it runs
//!   (`rev-parse`, `status`, and with a temporary index `read-tree HEAD`,
//!   `add --all`, `write-tree`, `commit-tree`), on the same tree.
//!
//! Run: `cargo bench -p stud --bench checkpoints`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use stud::kernel::checkpoints::{CheckpointSettings, Checkpoints};

const DIRS: usize = 100;
const FILES: usize = 100;
const ROUNDS: usize = 30;

fn git(dir: &Path, index: Option<&Path>, args: &[&str]) -> String {
    let mut c = Command::new("git");
    // No background `gc --auto` racing the explicit one.
    c.args(["-c", "gc.auto=0"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com");
    if let Some(i) = index {
        c.env("GIT_INDEX_FILE", i);
    }
    let out = c.output().expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    for d in 0..DIRS {
        let sub = dir.path().join(format!("src/m{d:03}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        for f in 0..FILES {
            let line = format!("// module {d} file {f}: some ordinary source text\n");
            std::fs::write(
                sub.join(format!("f{f:03}.rs")),
                line.repeat(2048 / line.len()),
            )
            .expect("write");
        }
    }
    git(dir.path(), None, &["init", "-q", "-b", "main"]);
    git(dir.path(), None, &["add", "-A"]);
    git(dir.path(), None, &["commit", "-qm", "tree"]);
    git(dir.path(), None, &["gc", "-q"]);
    dir
}

/// Change `n` files (round `r` picks different ones).
fn touch(root: &Path, r: usize, n: usize) {
    for i in 0..n {
        let k = (r * n + i) % (DIRS * FILES);
        let p = root.join(format!("src/m{:03}/f{:03}.rs", k / FILES, k % FILES));
        let mut text = std::fs::read_to_string(&p).expect("read");
        text.push_str(&format!("// changed in round {r}\n"));
        std::fs::write(&p, text).expect("write");
    }
}

fn report(what: &str, mut v: Vec<Duration>) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what:<58} median {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms",
        ms(v[v.len() / 2]),
        ms(v[(v.len() * 95 / 100).min(v.len() - 1)]),
        ms(v[v.len() - 1])
    );
}

/// The racy window: a file modified within it is read again next time.
fn settle() {
    std::thread::sleep(Duration::from_millis(40));
}

fn ours(repo: &Path, git_commits: bool) {
    let form = if git_commits {
        "store + git commit"
    } else {
        "store only"
    };
    let home = tempfile::tempdir().expect("home");
    let settings = CheckpointSettings {
        git_commits,
        ..CheckpointSettings::default()
    };
    let c = Checkpoints::open(home.path(), repo, "bench", &settings);
    let mut turn = 0;
    let mut first = Vec::new();
    turn += 1;
    c.turn_opened(turn, "first", 0);
    let t = Instant::now();
    c.before_change().expect("snapshot");
    first.push(t.elapsed());
    c.turn_closed(None).expect("close");
    println!(
        "{:<58} {:>7.2} ms (every file read once)",
        format!("first snapshot, {form}"),
        first[0].as_secs_f64() * 1000.0
    );
    settle();
    let (mut same, mut ends) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        turn += 1;
        c.turn_opened(turn, "nothing", 0);
        let t = Instant::now();
        c.before_change().expect("snapshot");
        same.push(t.elapsed());
        let t = Instant::now();
        c.turn_closed(None).expect("close");
        ends.push(t.elapsed());
    }
    report(
        &format!("snapshot before a turn, nothing changed, {form}"),
        same,
    );
    report(&format!("turn end (snapshot after, journal), {form}"), ends);
    let mut ten = Vec::new();
    for r in 0..ROUNDS {
        touch(repo, r, 10);
        settle();
        turn += 1;
        c.turn_opened(turn, "ten", 0);
        let t = Instant::now();
        c.before_change().expect("snapshot");
        ten.push(t.elapsed());
        c.turn_closed(None).expect("close");
    }
    report(
        &format!("snapshot before a turn, 10 files changed, {form}"),
        ten,
    );
    // Undo of a turn that changed 10 files, then its undo (so the tree
    // is the same for the next round).
    let mut undo = Vec::new();
    for r in 0..ROUNDS / 3 {
        settle();
        turn += 1;
        c.turn_opened(turn, "ten", 0);
        c.before_change().expect("snapshot");
        touch(repo, 1000 + r, 10);
        c.turn_closed(None).expect("close");
        settle();
        let t = Instant::now();
        let plan = c.plan_undo().expect("plan");
        c.carry_out(&plan, false).expect("undo");
        undo.push(t.elapsed());
        assert_eq!(plan.changes.len(), 10);
    }
    report(
        &format!("undo of 10 changed files (plan + restore), {form}"),
        undo,
    );
}

/// Codex's ghost commit as it runs it (`codex-rs/git-tooling`).
fn codex_ghost_commit(repo: &Path) -> String {
    git(repo, None, &["rev-parse", "--show-toplevel"]);
    let head = git(repo, None, &["rev-parse", "--verify", "HEAD"]);
    git(
        repo,
        None,
        &[
            "status",
            "--porcelain=2",
            "-z",
            "--ignored=matching",
            "--untracked-files=all",
        ],
    );
    let tmp = tempfile::tempdir().expect("tmp");
    let index = tmp.path().join("index");
    git(repo, Some(&index), &["read-tree", &head]);
    git(repo, Some(&index), &["add", "--all"]);
    let tree = git(repo, Some(&index), &["write-tree"]);
    git(
        repo,
        Some(&index),
        &["commit-tree", &tree, "-p", &head, "-m", "codex snapshot"],
    )
}

fn codex(repo: &Path) {
    let mut same = Vec::new();
    for _ in 0..ROUNDS / 3 {
        let t = Instant::now();
        codex_ghost_commit(repo);
        same.push(t.elapsed());
    }
    report(
        "Codex ghost commit (git subprocesses), nothing changed",
        same,
    );
    let mut ten = Vec::new();
    for r in 0..ROUNDS / 3 {
        touch(repo, 2000 + r, 10);
        let t = Instant::now();
        codex_ghost_commit(repo);
        ten.push(t.elapsed());
    }
    report(
        "Codex ghost commit (git subprocesses), 10 files changed",
        ten,
    );
}

fn main() {
    let repo = repository();
    println!(
        "10,000-file git repository ({} folders of {} files, 2 KiB each), {} rounds",
        DIRS, FILES, ROUNDS
    );
    ours(repo.path(), false);
    ours(repo.path(), true);
    codex(repo.path());
}
