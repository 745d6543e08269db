//! The full-screen UI's screen is always what a full repaint of the same
//! state draws. `stud` runs on a pty; its output goes through a terminal
//! emulator (`vt100`); after every step the whole emulated screen is
//! compared with the screen after Ctrl-L (clear, then draw everything).
//! A difference is a cell the UI believes is on screen and is not, or the
//! reverse: the corruption a person sees after `/clear`.

use crate::common;

use std::time::{Duration, Instant};

use common::frames::Frames;
use common::pty::Term;
use common::{StudEnv, call};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
const CTRL_L: &[u8] = b"\x0c";
/// How long the screen must stay unchanged to count as settled.
const QUIET: Duration = Duration::from_millis(250);

/// The whole screen as a person sees it (cells, colours, attributes)
/// once nothing changed on it for [`QUIET`].
fn settled(t: &Term) -> String {
    let start = Instant::now();
    let mut last = t.visible();
    let mut since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = t.visible();
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= QUIET {
            return last;
        }
        assert!(start.elapsed() < WAIT, "the screen never settled:\n{last}");
    }
}

/// After `step`, what is on screen is what a full repaint draws.
fn same_as_a_repaint(t: &mut Term, step: &str) -> String {
    let seen = settled(t);
    let before = t.raw().len();
    t.send(CTRL_L);
    let repainted = settled(t);
    if seen != repainted {
        // What the program wrote up to the repaint, the end of it: the
        // bytes that left the screen wrong.
        let raw = t.raw();
        let from = before.saturating_sub(6000);
        eprintln!(
            "the output before the repaint (its last {} bytes):\n{}",
            before - from,
            String::from_utf8_lossy(&raw[from..before]).escape_debug()
        );
    }
    assert_eq!(
        seen, repainted,
        "after {step}, the screen is not what a full repaint of the same state draws"
    );
    seen
}

/// The one status line: the provider, the mode, `/help` at its end,
/// nothing of another line mixed in.
fn status_line(screen: &str) -> String {
    let lines: Vec<String> = screen
        .lines()
        .filter(|l| l.contains("scripted/scripted"))
        .map(without_marks)
        .collect();
    assert_eq!(lines.len(), 1, "one status line:\n{screen}");
    let line = lines[0].trim_end().to_string();
    assert!(line.ends_with("│ /help"), "status line `{line}`:\n{screen}");
    assert_eq!(line.matches("/help").count(), 1, "`{line}`");
    line
}

/// The status line as shown now, if there is one with the session on it.
fn shown_status(t: &Term) -> Option<String> {
    t.visible()
        .lines()
        .map(without_marks)
        .find(|l| l.contains("scripted/scripted"))
        .map(|l| l.trim_end().to_string())
}

/// After `/clear`: wait until the new session's status replaced `before`
/// (its start reaches the UI after the UI drew). The screen is read once
/// per look: read twice, the old status could pass the first test and a
/// frame in between the second.
fn wait_new_session(t: &Term, before: Option<&str>) {
    t.wait_for("a new, empty session", WAIT);
    let start = Instant::now();
    loop {
        let shown = shown_status(t);
        if shown.is_some() && shown.as_deref() != before {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "the new session never showed:\n{}",
            t.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A row of [`Term::visible`] without its style marks.
fn without_marks(row: &str) -> String {
    let mut out = String::new();
    let mut in_mark = false;
    for c in row.chars() {
        match c {
            '«' => in_mark = true,
            '»' => in_mark = false,
            c if !in_mark => out.push(c),
            _ => {}
        }
    }
    out
}

fn env_with(turns: Value) -> StudEnv {
    let env = StudEnv::new();
    env.script(turns, json!({}));
    env
}

/// The reproduction from issue 36: `/help`, `/clear`, `/mode`, then a
/// prompt, in a 100x30 terminal. Each answer shows, the status line is
/// whole, and the screen is what a repaint draws after every step.
#[test]
fn clear_leaves_a_screen_that_is_what_a_repaint_draws() {
    let env = env_with(json!([{"text": "Here is what the project contains: main.rs"}]));
    let mut t = Term::spawn(&env, &[], 100, 30);
    t.wait_for("/help", WAIT);
    // Started means the session is up: its provider is on the status line
    // (the UI draws before the session's start reaches it).
    t.wait_for("scripted/scripted", WAIT);
    same_as_a_repaint(&mut t, "start");
    t.line("/help");
    t.wait_for("Keys (full-screen UI)", WAIT);
    same_as_a_repaint(&mut t, "/help");
    let before = status_line(&settled(&t));
    t.line("/clear");
    wait_new_session(&t, Some(&before));
    let screen = same_as_a_repaint(&mut t, "/clear");
    assert!(
        !screen.contains("Keys (full-screen UI)"),
        "/clear left the old transcript:\n{screen}"
    );
    assert!(
        screen.contains("a new, empty session"),
        "no /clear notice:\n{screen}"
    );
    let after = status_line(&screen);
    assert_ne!(before, after, "a new session has a new id");
    t.line("/mode");
    t.wait_for("mode: ask", WAIT);
    let screen = same_as_a_repaint(&mut t, "/mode");
    status_line(&screen);
    t.line("what is here?");
    t.wait_for("Here is what the project contains: main.rs", WAIT);
    let screen = same_as_a_repaint(&mut t, "a prompt");
    status_line(&screen);
}

/// `/clear` goes from the last session's frame to the new one's in one
/// synchronized update: a terminal that knows the mode never shows a
/// blank screen in between, however long the new UI takes to start. The
/// whole output is replayed through the emulator and looked at before
/// every escape sequence, so no blank moment between two reads is missed.
#[test]
fn clear_never_shows_a_blank_screen_in_between() {
    let env = env_with(json!([{"text": "Here is what the project contains: main.rs"}]));
    let mut t = Term::spawn(&env, &[], 100, 30);
    t.wait_for("scripted/scripted", WAIT);
    t.line("what is here?");
    t.wait_for("main.rs", WAIT);
    let before = status_line(&settled(&t));
    t.line("/clear");
    wait_new_session(&t, Some(&before));
    settled(&t);
    let raw = t.raw();
    let mut frames = Frames::new(30, 100);
    let mut drawn = false;
    let mut at = 0;
    for piece in raw.split_inclusive(|b| *b == 0x1b) {
        frames.process(piece);
        at += piece.len();
        let blank = frames.screen().contents().trim().is_empty();
        assert!(
            !(drawn && blank),
            "the screen went blank after byte {at} of {}: {:?}",
            raw.len(),
            String::from_utf8_lossy(&raw[at.saturating_sub(300)..(at + 300).min(raw.len())])
        );
        drawn |= !blank;
    }
    assert!(drawn, "nothing was drawn");
}

/// One thing a person does. A session's scripted model plays the same
/// turns from the start after every `/clear` (its place is the session's),
/// so the k-th model action of every session is [`MODEL_ACTIONS`]`[k]`.
#[derive(Debug, Clone, Copy)]
enum Action {
    /// The next of [`MODEL_ACTIONS`].
    Model,
    Clear,
    Help,
    Resize {
        cols: u16,
        rows: u16,
    },
    Mode,
}

/// What the model does, in the order every session meets it.
#[derive(Debug, Clone, Copy)]
enum ModelTurn {
    /// An answer of this many lines, some with wide and combining
    /// characters; its last line is `end-<tag>`.
    Answer { lines: usize, tag: char },
    /// A `write` call, asked and allowed once, then `wrote it`.
    Asked,
}

const MODEL_ACTIONS: [ModelTurn; 4] = [
    ModelTurn::Answer {
        lines: 45,
        tag: 'a',
    },
    ModelTurn::Asked,
    ModelTurn::Answer { lines: 3, tag: 'b' },
    ModelTurn::Answer {
        lines: 70,
        tag: 'c',
    },
];

fn script() -> Value {
    let mut turns = Vec::new();
    for m in MODEL_ACTIONS {
        match m {
            ModelTurn::Answer { lines, tag } => {
                let mut text: Vec<String> = (0..lines - 1)
                    .map(|n| match n % 3 {
                        0 => format!(
                            "{tag}{n} 漢字の行 e\u{301}t\u{e9} {}",
                            "ｗｉｄｅ ".repeat(n % 9)
                        ),
                        _ => format!("{tag}{n} {}", "word ".repeat(n % 23)),
                    })
                    .collect();
                text.push(format!("end-{tag}"));
                turns.push(json!({"text": text.join("\n")}));
            }
            ModelTurn::Asked => {
                turns.push(json!({"text": "", "tool_calls": [call("write", json!({"path": "asked.txt", "content": "x"}))]}));
                turns.push(json!({"text": "wrote it"}));
            }
        }
    }
    Value::Array(turns)
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => Just(Action::Model),
        1 => Just(Action::Clear),
        1 => Just(Action::Help),
        1 => (80u16..140, 16u16..45).prop_map(|(cols, rows)| Action::Resize { cols, rows }),
        1 => Just(Action::Mode),
    ]
}

/// Do `a`; `used` counts the session's model actions so far.
fn perform(t: &mut Term, a: Action, used: &mut usize) {
    match a {
        Action::Model => {
            let Some(turn) = MODEL_ACTIONS.get(*used) else {
                // The script is played out for this session: `/help`.
                return perform(t, Action::Help, used);
            };
            *used += 1;
            match *turn {
                ModelTurn::Answer { tag, .. } => {
                    t.line(&format!("answer {tag}"));
                    t.wait_for(&format!("end-{tag}"), WAIT);
                }
                ModelTurn::Asked => {
                    t.line("write it");
                    t.wait_for("Allow write", WAIT);
                    same_as_a_repaint(t, "a question");
                    t.send(b"1");
                    t.wait_for("wrote it", WAIT);
                }
            }
        }
        Action::Clear => {
            let before = shown_status(t);
            t.line("/clear");
            wait_new_session(t, before.as_deref());
            *used = 0;
        }
        Action::Help => {
            t.line("/help");
            t.wait_for("Keys (full-screen UI)", WAIT);
        }
        Action::Resize { cols, rows } => t.resize(cols, rows),
        Action::Mode => {
            t.line("/mode");
            t.wait_for("mode: ask", WAIT);
        }
    }
}

proptest! {
    // A fixed seed, so CI runs the same sequences; another seed explores
    // others (`STUD_SCREEN_SEED=n cargo test screen_model`).
    #![proptest_config(ProptestConfig {
        cases: 5,
        max_shrink_iters: 16,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(
            std::env::var("STUD_SCREEN_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(36),
        ),
        ..ProptestConfig::default()
    })]

    /// Random sequences of long and wide answers, a question answered,
    /// `/clear`, `/help`, `/mode` and resizes: after each, the screen is
    /// what a full repaint draws, with one whole status line.
    #[test]
    fn the_screen_is_always_what_a_repaint_draws(actions in prop::collection::vec(action(), 3..9)) {
        let env = env_with(script());
        let mut t = Term::spawn(&env, &[], 100, 30);
        t.wait_for("/help", WAIT);
        t.wait_for("scripted/scripted", WAIT);
        let mut used = 0;
        for (i, a) in actions.iter().enumerate() {
            perform(&mut t, *a, &mut used);
            let screen = same_as_a_repaint(&mut t, &format!("step {i} {a:?}"));
            status_line(&screen);
        }
    }
}
