//! Checkpoints as a person meets them: a turn that changes files with
//! `edit` and through `bash` (`sed -i`, `rm`, a new file, a rename, a
//! `chmod +x`), taken back with `/undo` to the byte and the mode, in a git
//! repository (whose index, HEAD, branches and stash snapshots never
//! touch) and in a plain folder; a file the person edited after the turn
//! is not clobbered; the conversation rewound alone; `stud session
//! rewind` headless; a kill -9 mid-restore leaves no torn file.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use crate::common;

use common::{StudEnv, call};
use serde_json::{Value, json};

/// What the turn does: one `edit`, then one shell line with every kind
/// of change.
const SHELL: &str = "sed -i 's/alpha/ALPHA/' sed.txt && rm gone.txt && echo made > new.txt && mv old-name.txt new-name.txt && chmod +x run.sh";

fn seed(env: &StudEnv) {
    env.file("edited.txt", "line one\nline two\n");
    env.file("sed.txt", "alpha beta\n");
    env.file("gone.txt", "keep me\n");
    env.file("old-name.txt", "moving\n");
    env.file("run.sh", "echo hi\n");
    env.file("bin.dat", "\u{0}\u{1}\u{2}binary");
}

/// Every file of the project (but `.git`): path, bytes, mode.
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    common::walk(root, &mut |p| {
        let rel = p
            .strip_prefix(root)
            .expect("inside")
            .to_string_lossy()
            .to_string();
        if rel.starts_with(".git/") || !p.is_file() {
            return;
        }
        let mode = std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777;
        out.insert(rel, (std::fs::read(p).expect("read"), mode));
    });
    out
}

fn script_turn(env: &StudEnv, extra: Vec<Value>) {
    let mut turns = vec![
        json!({"text": "", "tool_calls": [call("edit", json!({"path": "edited.txt", "old_string": "line two", "new_string": "line 2"}))]}),
        json!({"text": "", "tool_calls": [call("bash", json!({"command": SHELL}))]}),
        json!({"text": "changed things"}),
    ];
    turns.extend(extra);
    env.script(Value::Array(turns), json!({}));
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Every byte under `.git`, by path.
fn git_dir(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let git = root.join(".git");
    common::walk(&git, &mut |p| {
        if p.is_file() {
            let rel = p
                .strip_prefix(&git)
                .expect("inside")
                .to_string_lossy()
                .to_string();
            out.insert(rel, std::fs::read(p).expect("read"));
        }
    });
    out
}

fn undo_a_turn(env: &StudEnv) {
    let before = tree(env.project.path());
    let out = env.on_terminal("run --yolo", "change things\n/undo\ny\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("changed things"), "{screen}");
    // The question names every file with what happens to it.
    for line in [
        "edited.txt: put back (+1 -1 lines)",
        "sed.txt: put back (+1 -1 lines)",
        "gone.txt: put back (it was removed since)",
        "new.txt: removed (it was made since)",
        "new-name.txt: removed (it was made since)",
        "old-name.txt: put back (it was removed since)",
        "run.sh: mode back to 644",
    ] {
        assert!(screen.contains(line), "missing `{line}` in:\n{screen}");
    }
    assert!(screen.contains("restored "), "{screen}");
    assert_eq!(tree(env.project.path()), before, "{screen}");
}

#[test]
fn a_turn_of_edits_and_shell_commands_is_undone_in_a_plain_folder() {
    let env = StudEnv::new();
    seed(&env);
    script_turn(&env, vec![]);
    undo_a_turn(&env);
}

#[test]
fn in_a_git_repository_undo_restores_and_the_index_refs_and_stash_are_untouched() {
    let env = StudEnv::new();
    seed(&env);
    let p = env.project.path();
    git(p, &["init", "-q", "-b", "main"]);
    env.file(".gitignore", "build/\n");
    env.file("build/out.o", "ignored build output");
    git(p, &["add", "-A"]);
    git(p, &["commit", "-qm", "first"]);
    // A stash, and a staged change the person is in the middle of.
    env.file("edited.txt", "line one\nline two\nstashed\n");
    git(p, &["stash", "-q"]);
    env.file("staged.txt", "staged by the person\n");
    git(p, &["add", "staged.txt"]);
    script_turn(&env, vec![]);
    let status = git(p, &["status", "--porcelain"]);
    let dot_git = git_dir(p);
    undo_a_turn(&env);
    // Under .git only objects were added (the checkpoint commits and what
    // they hold): no index, ref, stash or existing object changed.
    let now = git_dir(p);
    for (path, bytes) in &dot_git {
        assert_eq!(now.get(path), Some(bytes), ".git/{path} changed");
    }
    let added: Vec<&String> = now.keys().filter(|k| !dot_git.contains_key(*k)).collect();
    assert!(!added.is_empty());
    assert!(added.iter().all(|k| k.starts_with("objects/")), "{added:?}");
    git(p, &["fsck", "--strict"]);
    assert_eq!(git(p, &["status", "--porcelain"]), status);
    // The commit of the tree before the turn is named, and git reads it:
    // against it, the turn's edit shows once the undo is undone.
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).expect("json");
    let shown = env.ok(&[
        "session",
        "show",
        list[0]["session_id"].as_str().expect("id"),
    ]);
    let commit = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("before it: git commit "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no commit in\n{shown}"))
        .to_string();
    assert_eq!(
        git(
            p,
            &["diff", "--stat", &commit, "--", "edited.txt", "sed.txt"]
        ),
        ""
    );
    env.on_terminal("-c", "/undo\ny\n");
    let diff = git(
        p,
        &["diff", "--stat", &commit, "--", "edited.txt", "sed.txt"],
    );
    assert!(diff.contains("2 files changed"), "{diff}");
    assert_eq!(git(p, &["stash", "list"]).lines().count(), 1);
    assert_eq!(
        std::fs::read_to_string(p.join("build/out.o")).expect("ignored file"),
        "ignored build output"
    );
}

#[test]
fn undo_is_undoable_across_a_resume() {
    let env = StudEnv::new();
    seed(&env);
    script_turn(&env, vec![]);
    let before = tree(env.project.path());
    let out = env.on_terminal("run --yolo", "change things\n");
    assert!(String::from_utf8_lossy(&out.stdout).contains("changed things"));
    let after = tree(env.project.path());
    assert_ne!(after, before);
    let out = env.on_terminal("-c", "/undo\ny\n");
    assert_eq!(
        tree(env.project.path()),
        before,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The undo is undone: the turn's changes are back.
    let out = env.on_terminal("-c", "/undo\ny\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("Undo the restore"), "{screen}");
    assert_eq!(tree(env.project.path()), after, "{screen}");
    // `session show` marks what each turn changed, and the undone one.
    let id = session_id(&env);
    let shown = env.ok(&["session", "show", &id]);
    assert!(shown.contains("files changed:"), "{shown}");
    assert!(
        shown.contains("turn 1 (“change things”): edited.txt, gone.txt, new-name.txt, new.txt, old-name.txt, run.sh, sed.txt"),
        "{shown}"
    );
    assert!(shown.contains("[undone]"), "{shown}");
}

#[test]
fn a_file_the_person_edited_after_the_turn_is_not_clobbered() {
    let env = StudEnv::new();
    seed(&env);
    script_turn(&env, vec![]);
    env.on_terminal("run --yolo", "change things\n");
    // The person edits a file the turn changed.
    env.file("edited.txt", "my own words\n");
    // Option 1: restore the rest, keep the person's file.
    let out = env.on_terminal("-c", "/undo\n1\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("Changed since (by you or another program): edited.txt"),
        "{screen}"
    );
    assert!(
        screen.contains("kept edited.txt (changed since)"),
        "{screen}"
    );
    assert_eq!(env.read("edited.txt"), "my own words\n");
    assert_eq!(env.read("sed.txt"), "alpha beta\n");
    assert!(!env.project.path().join("new.txt").exists());
}

#[test]
fn the_conversation_alone_is_rewound() {
    let env = StudEnv::new();
    env.file("notes.txt", "mine\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "notes.txt", "content": "the model's\n"}))]},
            {"text": "first answer, {{messages}} messages"},
            {"text": "second answer, {{messages}} messages"},
            {"text": "third answer, {{messages}} messages"}
        ]),
        json!({}),
    );
    // Turn 1 (3 messages in its last request), turn 2 (5), then back to
    // before turn 2, conversation only: the next request has 5 again, not 7.
    let out = env.on_terminal("run --yolo", "one\ntwo\n/rewind 2\n3\nthree\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("first answer, 3 messages"), "{screen}");
    assert!(screen.contains("second answer, 5 messages"), "{screen}");
    assert!(
        screen.contains("conversation rewound to 4 message(s)"),
        "{screen}"
    );
    assert!(screen.contains("third answer, 5 messages"), "{screen}");
    // Files untouched.
    assert_eq!(env.read("notes.txt"), "the model's\n");
}

fn session_id(env: &StudEnv) -> String {
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).expect("json");
    list[0]["session_id"].as_str().expect("id").to_string()
}

#[test]
fn a_headless_rewind_says_what_it_would_do_until_told_yes() {
    let env = StudEnv::new();
    seed(&env);
    script_turn(&env, vec![]);
    let before = tree(env.project.path());
    env.on_terminal("run --yolo", "change things\n");
    let changed = tree(env.project.path());
    let id = session_id(&env);
    let dry = env.ok(&["session", "rewind", &id, "1"]);
    assert!(
        dry.contains("new.txt: removed (it was made since)"),
        "{dry}"
    );
    assert!(dry.contains("run again with --yes"), "{dry}");
    assert_eq!(tree(env.project.path()), changed);
    let done = env.ok(&["session", "rewind", &id, "1", "--files", "--yes"]);
    assert!(done.contains("restored 7 file(s)"), "{done}");
    assert_eq!(tree(env.project.path()), before);
    // A turn that does not exist is named.
    let out = env.run(&["session", "rewind", &id, "9", "--yes"], "");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no turn 9"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// kill -9 while a rewind writes 400 files: every file is whole, either
/// as the turn left it or as restored, never torn. The kill must land
/// mid-way (some files restored, some not): the restore renames each
/// file into place in path order, so the test waits for the first one's
/// new inode and kills at once; a kill that still came too late (or too
/// early) is tried again, a bounded number of times.
#[test]
fn a_kill_during_a_restore_leaves_no_torn_file() {
    use std::os::unix::fs::MetadataExt as _;
    const FILES: usize = 400;
    const TRIES: usize = 5;
    let env = StudEnv::new();
    let name = |i: usize| format!("data/f{i:03}.txt");
    let old = |i: usize| format!("{i:04} old ").repeat(16 * 1024);
    let new = |i: usize| format!("{i:04} new ").repeat(16 * 1024);
    for i in 0..FILES {
        env.file(&name(i), &old(i));
    }
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "for f in data/*.txt; do sed -i 's/ old / new /g' $f; done"}))]},
            {"text": "rewrote them"}
        ]),
        json!({}),
    );
    env.on_terminal(
        "run --yolo",
        "rewrite
",
    );
    assert_eq!(env.read("data/f007.txt"), new(7));
    let id = session_id(&env);
    let first = env.project.path().join(name(0));
    let inode = || std::fs::symlink_metadata(&first).map(|m| m.ino()).ok();
    // Once a try ran to the end, the files are put back as the turn left
    // them by the test, so the next tries overwrite "changed since" files.
    let mut overwrite = false;
    let mut landed = None;
    for attempt in 1..=TRIES {
        let mut args = vec!["session", "rewind", &id, "1", "--files", "--yes"];
        if overwrite {
            args.push("--overwrite");
        }
        let was = inode();
        let mut child = env.command(&args).spawn().expect("start");
        let started = std::time::Instant::now();
        while inode() == was
            && started.elapsed() < std::time::Duration::from_secs(60)
            && child.try_wait().expect("wait").is_none()
        {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        let _ = child.kill();
        let output = child.wait_with_output().expect("wait");
        let (mut olds, mut news) = (0, 0);
        for i in 0..FILES {
            let text = env.read(&name(i));
            if text == old(i) {
                olds += 1;
            } else if text == new(i) {
                news += 1;
            } else {
                panic!("{} is torn ({} bytes)", name(i), text.len());
            }
        }
        eprintln!(
            "try {attempt}: after kill -9, {olds} restored, {news} not yet ({})",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        if olds > 0 && news > 0 {
            landed = Some(olds);
            break;
        }
        if olds > 0 {
            for i in 0..FILES {
                env.file(&name(i), &new(i));
            }
            overwrite = true;
        }
    }
    let restored = landed.unwrap_or_else(|| {
        panic!("in {TRIES} tries the kill never landed mid-way through the restore")
    });
    assert!(restored < FILES);
    // The rewind can be run again and finishes the job.
    let mut args = vec!["session", "rewind", &id, "1", "--files", "--yes"];
    if overwrite {
        args.push("--overwrite");
    }
    let done = env.ok(&args);
    assert!(
        done.contains(&format!("restored {} file(s)", FILES - restored)),
        "{done}"
    );
    for i in 0..FILES {
        assert_eq!(env.read(&name(i)), old(i));
    }
}

/// Esc Esc between turns opens `/rewind` in the full-screen UI: the turns
/// listed with their files, then what to put back, then the question.
#[test]
fn esc_esc_opens_rewind_in_the_full_screen_ui() {
    use common::pty::Term;
    use std::time::Duration;
    let wait = Duration::from_secs(20);
    let env = StudEnv::new();
    env.file("keep.txt", "kept\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "echo made > new.txt && rm keep.txt"}))]},
            {"text": "changed things"}
        ]),
        json!({}),
    );
    let mut t = Term::spawn(&env, &["--yolo"], 100, 40);
    t.wait_for("/help", wait);
    t.line("change things");
    t.wait_for("changed things", wait);
    // The turn has ended once the activity line no longer says so (an
    // Esc during the turn would stop it instead).
    let start = std::time::Instant::now();
    while t.contents().contains("working") {
        assert!(
            start.elapsed() < wait,
            "the turn never ended:\n{}",
            t.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    t.send(b"\x1b");
    t.wait_for("Esc again to rewind", wait);
    t.send(b"\x1b");
    let screen = t.wait_for("Rewind to before which turn?", wait);
    assert!(
        screen.contains("turn 1 (“change things”) - 2 file(s): keep.txt, new.txt"),
        "{screen}"
    );
    t.send(b"1");
    t.wait_for("Files and conversation", wait);
    t.send(b"1");
    let screen = t.wait_for("new.txt: removed (it was made since)", wait);
    assert!(
        screen.contains("keep.txt: put back (it was removed since)"),
        "{screen}"
    );
    t.send(b"1");
    t.wait_for(
        "restored keep.txt, new.txt; conversation rewound to 0",
        wait,
    );
    assert_eq!(env.read("keep.txt"), "kept\n");
    assert!(!env.project.path().join("new.txt").exists());
}

/// A file over `checkpoints.maxFileMiB` is not kept: the turn that changes
/// it says so, and `/undo` names it as what it cannot put back while it
/// restores the rest.
#[test]
fn a_file_too_large_to_keep_is_named_and_the_rest_restored() {
    let env = StudEnv::new();
    env.file("big.bin", &"x".repeat(2 * 1024 * 1024));
    env.file("small.txt", "small\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "echo y >> big.bin && echo changed > small.txt"}))]},
            {"text": "changed both"}
        ]),
        json!({"checkpoints": {"maxFileMiB": 1}}),
    );
    let out = env.on_terminal("run --yolo", "change both\n/undo\ny\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen
            .contains("the checkpoint did not keep big.bin: 2097152 bytes, over 1048576 per file"),
        "{screen}"
    );
    assert!(
        screen.contains(
            "big.bin: cannot be put back (too large to keep when the snapshot was taken)"
        ),
        "{screen}"
    );
    assert_eq!(env.read("small.txt"), "small\n");
    assert!(env.read("big.bin").ends_with("xy\n"));
}

/// `stud session rewind` opens the checkpoints with the person's
/// `checkpoints.*`, as the session did: with `gitCommits: false` it writes
/// nothing under `.git`, not even an unreferenced commit.
#[test]
fn a_headless_rewind_with_git_commits_off_leaves_every_byte_of_git_alone() {
    let env = StudEnv::new();
    seed(&env);
    let p = env.project.path();
    git(p, &["init", "-q", "-b", "main"]);
    git(p, &["add", "-A"]);
    git(p, &["commit", "-qm", "first"]);
    script_turn(&env, vec![]);
    env.scripted_settings(json!({"checkpoints": {"gitCommits": false}}));
    let dot_git = git_dir(p);
    let before = tree(p);
    env.on_terminal("run --yolo", "change things\n");
    assert_ne!(tree(p), before);
    assert_eq!(git_dir(p), dot_git, "the session wrote under .git");
    let id = session_id(&env);
    let done = env.ok(&["session", "rewind", &id, "1", "--files", "--yes"]);
    assert!(done.contains("restored 7 file(s)"), "{done}");
    assert_eq!(tree(p), before);
    let now = git_dir(p);
    let added: Vec<&String> = now.keys().filter(|k| !dot_git.contains_key(*k)).collect();
    assert!(added.is_empty(), "the rewind wrote under .git: {added:?}");
    assert_eq!(now, dot_git, "the rewind changed .git");
}

/// With `checkpoints.includeIgnored: true` an ignored file the turn
/// changed is put back by the headless rewind too, and described as the
/// session would (not as removed since, nor as changed since).
#[test]
fn a_headless_rewind_keeps_ignored_files_when_the_settings_say_so() {
    let env = StudEnv::new();
    env.file(".gitignore", "build/\n");
    env.file("build/out.o", "old output\n");
    env.file("src.txt", "source\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "echo new output > build/out.o && echo changed > src.txt"}))]},
            {"text": "built"}
        ]),
        json!({"checkpoints": {"includeIgnored": true}}),
    );
    env.on_terminal("run --yolo", "build it\n");
    assert_eq!(env.read("build/out.o"), "new output\n");
    let id = session_id(&env);
    let dry = env.ok(&["session", "rewind", &id, "1", "--files"]);
    assert!(dry.contains("build/out.o: put back (+1 -1 lines)"), "{dry}");
    assert!(!dry.contains("changed since"), "{dry}");
    let done = env.ok(&["session", "rewind", &id, "1", "--files", "--yes"]);
    assert!(done.contains("restored 2 file(s)"), "{done}");
    assert_eq!(env.read("build/out.o"), "old output\n");
    assert_eq!(env.read("src.txt"), "source\n");
}

/// `stud session rewind ID TURN --conversation`: the stored history is
/// cut back to before the turn (a resume continues from there), files
/// untouched.
#[test]
fn a_headless_rewind_of_the_conversation_alone() {
    let env = StudEnv::new();
    env.file("notes.txt", "mine\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "notes.txt", "content": "the model's\n"}))]},
            {"text": "first answer, {{messages}} messages"},
            {"text": "second answer, {{messages}} messages"},
            {"text": "third answer, {{messages}} messages"}
        ]),
        json!({}),
    );
    let out = env.on_terminal("run --yolo", "one\ntwo\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("second answer, 5 messages"), "{screen}");
    let id = session_id(&env);
    let dry = env.ok(&["session", "rewind", &id, "2", "--conversation"]);
    assert!(
        dry.contains("conversation: 4 message(s) kept of 6"),
        "{dry}"
    );
    assert!(!dry.contains("notes.txt"), "{dry}");
    let done = env.ok(&["session", "rewind", &id, "2", "--conversation", "--yes"]);
    assert!(done.contains("conversation rewound"), "{done}");
    assert!(!done.contains("restored"), "{done}");
    assert_eq!(env.read("notes.txt"), "the model's\n");
    // Resumed, the next request has turn 1's 4 messages and the new
    // prompt: 5, not 7.
    let out = env.on_terminal("-c", "three\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("third answer, 5 messages"), "{screen}");
}

/// A file the person edited after the turn: a headless rewind names it
/// and keeps it; only `--overwrite` puts it back too.
#[test]
fn a_headless_rewind_overwrites_the_persons_edit_only_with_overwrite() {
    let env = StudEnv::new();
    seed(&env);
    script_turn(&env, vec![]);
    let before = tree(env.project.path());
    env.on_terminal("run --yolo", "change things\n");
    env.file("edited.txt", "my own words\n");
    let id = session_id(&env);
    let done = env.ok(&["session", "rewind", &id, "1", "--files", "--yes"]);
    assert!(
        done.contains("changed since (kept unless --overwrite): edited.txt"),
        "{done}"
    );
    assert!(done.contains("kept edited.txt (changed since)"), "{done}");
    assert!(done.contains("restored 6 file(s)"), "{done}");
    assert_eq!(env.read("edited.txt"), "my own words\n");
    assert_eq!(env.read("sed.txt"), "alpha beta\n");
    let done = env.ok(&[
        "session",
        "rewind",
        &id,
        "1",
        "--files",
        "--yes",
        "--overwrite",
    ]);
    assert!(done.contains("restored 1 file(s)"), "{done}");
    assert_eq!(tree(env.project.path()), before);
}

/// "Files and conversation" after the conversation was compacted: the
/// conversation cannot go back, so nothing is done (no file restored
/// first and then the conversation refused).
#[test]
fn a_rewind_of_files_and_conversation_after_a_compaction_changes_nothing() {
    let env = StudEnv::new();
    env.file("notes.txt", "mine\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [call("write", json!({"path": "notes.txt", "content": "the model's\n"}))]},
            {"text": "first answer"},
            {"text": "second answer"},
            {"text": "SUMMARY OF THE EARLY TALK"},
            {"text": "later answer"},
            {"text": "later answer"}
        ]),
        json!({"compaction": {"keepRecent": 2}}),
    );
    let out = env.on_terminal("run --yolo", "one\ntwo\n/compact\n/rewind 1\n1\ny\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("compacted:"), "{screen}");
    assert!(
        screen.contains("the conversation changed since that turn"),
        "{screen}"
    );
    assert!(!screen.contains("restored notes.txt"), "{screen}");
    assert_eq!(env.read("notes.txt"), "the model's\n");
}

/// A journal's modification time `days` ago.
fn age(path: &Path, days: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open the journal")
        .set_modified(t)
        .expect("set its mtime");
}

/// Wait (a short while) until `cond` holds: the prune runs beside the
/// session, on a thread of its own.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(10) {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    cond()
}

/// Journals older than `checkpoints.keepDays` go at a session's start,
/// at most once a day: the start asks whether a prune is due before it
/// starts a thread for one, so a second start the same day keeps an old
/// journal planted after the first.
#[test]
fn a_start_prunes_old_journals_once_a_day() {
    use sha2::Digest as _;
    let env = StudEnv::new();
    env.script(json!([{"text": "one"}, {"text": "two"}]), json!({}));
    let project = env.project.path().canonicalize().expect("project");
    let key = hex::encode(&sha2::Sha256::digest(project.as_os_str().as_encoded_bytes())[..8]);
    let sessions = env
        .home
        .path()
        .join("checkpoints")
        .join(&key)
        .join("sessions");
    std::fs::create_dir_all(&sessions).expect("sessions folder");
    let old = sessions.join("s-old.jsonl");
    std::fs::write(&old, "").expect("old journal");
    age(&old, 400);

    env.ok(&["run", "-p", "hello"]);
    let marker = sessions.parent().expect("dir").join(".pruned");
    assert!(
        eventually(|| !old.exists() && marker.exists()),
        "the old journal is pruned and the day marked"
    );

    let later = sessions.join("s-later.jsonl");
    std::fs::write(&later, "").expect("another old journal");
    age(&later, 400);
    env.ok(&["run", "-p", "hello again"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(later.exists(), "not pruned twice in a day");
}
