//! The full-screen terminal UI end to end: `stud` on a pseudo-terminal,
//! its screen read through a terminal emulator, keys typed as a person
//! types them.

use crate::common;

use std::time::{Duration, Instant};

use common::pty::Term;
use common::{StudEnv, call};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
const ESC: &[u8] = b"\x1b";
const CTRL_S: &[u8] = b"\x13";
const CTRL_C: &[u8] = b"\x03";

fn env_with(turns: Value, settings: Value) -> StudEnv {
    let env = StudEnv::new();
    env.script(turns, settings);
    env
}

/// `stud` in the project, 100x40, once its input box is up.
fn start(env: &StudEnv, args: &[&str]) -> Term {
    let term = Term::spawn(env, args, 100, 40);
    term.wait_for("/help", WAIT);
    term
}

/// The events of the session's jsonl log (the bundled logger).
fn logged(env: &StudEnv) -> Vec<Value> {
    let dir = env.home.path().join("data").join("jsonl");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        out.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    out
}

/// `/exit`, and wait for the program to end (the logger has flushed then).
fn quit(t: &mut Term) {
    t.line("/exit");
    assert!(t.wait_exit(WAIT).is_some(), "/exit did not end the program");
}

/// Wait until the running turn has ended on screen.
fn idle(t: &Term) {
    let start = Instant::now();
    while t.contents().contains("working") {
        assert!(
            start.elapsed() < WAIT,
            "the turn never ended:\n{}",
            t.contents()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn count(evs: &[Value], name: &str) -> usize {
    evs.iter().filter(|e| e["name"] == name).count()
}

#[test]
fn streamed_text_appears_and_the_status_line_names_the_model() {
    let env = env_with(
        json!([{"text": "Streamed **answer** with `code` here"}]),
        json!({}),
    );
    let mut t = start(&env, &[]);
    let screen = t.wait_for("scripted/scripted", WAIT);
    assert!(screen.contains(" ask "), "{screen}");
    t.line("hello");
    let screen = t.wait_for("Streamed answer with code here", WAIT);
    assert!(screen.contains("› hello"), "{screen}");
    idle(&t);
    t.send(CTRL_C);
    assert!(
        t.wait_exit(WAIT).is_some(),
        "Ctrl-C at an empty prompt quits"
    );
}

/// Bidirectional overrides and isolates in model text would reorder what
/// the person reads (`invoice_\u{202e}fdp.exe` shows as `invoice_exe.pdf`).
/// The bundled UI's layout happens to leave them out, but the painter is
/// what every full-screen UI draws through: `raw-screen` draws the model's
/// text one character per cell, exactly as it came, and the screen (read
/// through a terminal emulator) still shows none of them.
#[test]
fn bidi_overrides_in_model_text_never_reach_the_screen() {
    let env = env_with(
        json!([{"text": "see invoice_\u{202e}fdp.exe and \u{2066}x\u{2069} and \u{202a}y\u{202c} \u{200f}end"}]),
        json!({"active": {"interactor": "raw-screen"}}),
    );
    env.install("raw-screen");
    let mut t = Term::spawn(&env, &[], 100, 40);
    t.wait_for("ready>", WAIT);
    t.line("hello");
    let screen = t.wait_for("end", WAIT);
    assert!(screen.contains("see invoice_"), "{screen}");
    let steering: Vec<char> = screen
        .chars()
        .filter(|c| {
            matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
        })
        .collect();
    assert!(steering.is_empty(), "{steering:?} on screen:\n{screen}");
    t.send(CTRL_C);
    assert!(
        t.wait_exit(WAIT).is_some(),
        "Ctrl-C did not end the program"
    );
}

/// The first-run banner is an entry of the transcript: it shows above the
/// input box, inside the UI, and scrolls away as the conversation grows.
#[test]
fn the_first_run_banner_is_part_of_the_transcript() {
    let long: Vec<String> = (0..60).map(|n| format!("line {n}")).collect();
    let env = StudEnv::new();
    env.file(
        "script.json",
        &json!({"turns": [{"text": long.join("\n")}]}).to_string(),
    );
    // No provider chosen (so the banner shows), the demo's script replaced.
    env.settings(json!({"providers": {"scripted": {"script-file": "script.json"}}}));
    let mut t = Term::spawn(&env, &[], 100, 30);
    let screen = t.wait_for("no provider is configured", WAIT);
    let rows: Vec<&str> = screen.lines().collect();
    let banner = rows
        .iter()
        .position(|r| r.contains("no provider is configured"))
        .unwrap_or(usize::MAX);
    let input = rows.iter().position(|r| r.starts_with('┌')).unwrap_or(0);
    assert!(
        banner < input,
        "the banner is not in the transcript:\n{screen}"
    );
    t.line("a long answer");
    let screen = t.wait_for("line 59", WAIT);
    assert!(
        !screen.contains("no provider is configured"),
        "the banner stayed on screen while the transcript scrolled:\n{screen}"
    );
}

/// A long answer that arrives faster than the screen draws ends on screen
/// whole: the UI may be spared streamed tokens, but the recorded message
/// sets the answer's final text.
#[test]
fn a_long_fast_answer_ends_on_screen_whole() {
    let rows: Vec<String> = (0..400)
        .map(|n| format!("row {n} {}", "text ".repeat(n % 35)))
        .collect();
    let env = env_with(json!([{"text": rows.join("\n")}]), json!({}));
    let mut t = Term::spawn(&env, &[], 200, 60);
    t.wait_for("/help", WAIT);
    t.line("go");
    t.wait_for("row 399", WAIT);
    idle(&t);
    let screen = t.contents();
    assert!(screen.contains("row 399 text"), "{screen}");
}

#[test]
fn help_lists_every_bundled_command() {
    let env = env_with(json!([]), json!({}));
    let mut t = Term::spawn(&env, &[], 120, 60);
    t.wait_for("/help", WAIT);
    t.line("/help");
    let screen = t.wait_for("Keys (full-screen UI)", WAIT);
    for name in common::BUNDLED_COMMANDS {
        assert!(
            screen.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} missing:\n{screen}"
        );
    }
    // A description that wraps hangs under its own column, never at the
    // left edge under the command names.
    let list: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.starts_with("  /"))
        .take_while(|l| !l.starts_with("Input:"))
        .collect();
    assert!(list.len() > 10, "{screen}");
    for row in &list {
        assert!(
            row.is_empty() || row.starts_with("  /") || row.starts_with("    "),
            "`{row}` wraps to the left edge:\n{screen}"
        );
    }
}

#[test]
fn an_unknown_command_shows_the_error_and_sends_nothing() {
    let env = env_with(json!([{"text": "FIRST SCRIPTED REPLY"}]), json!({}));
    let mut t = start(&env, &[]);
    t.line("/nosuch");
    t.wait_for("unknown command /nosuch", WAIT);
    // The model's first answer is still unused: the next prompt gets it.
    t.line("hi");
    t.wait_for("FIRST SCRIPTED REPLY", WAIT);
    idle(&t);
    quit(&mut t);
    let evs = logged(&env);
    assert_eq!(count(&evs, "turn.start"), 1, "/nosuch started a turn");
    assert_eq!(count(&evs, "provider.request.started"), 1);
}

/// A model that writes `notes.txt` twice (`one`, then `two`), saying so
/// after each.
fn writes_one_then_two() -> Value {
    let write = |content: &str| json!({"text": "", "tool_calls": [call("write", json!({"path": "notes.txt", "content": content}))]});
    json!([write("one"), {"text": "wrote one"}, write("two"), {"text": "wrote two"}])
}

#[test]
fn an_approval_answered_for_this_session_is_not_asked_again() {
    let env = env_with(writes_one_then_two(), json!({}));
    let mut t = start(&env, &[]);
    t.line("write one");
    let screen = t.wait_for("Allow for this session", WAIT);
    assert!(
        screen.contains("Allow write?") && screen.contains("+ one"),
        "{screen}"
    );
    t.send(b"2");
    t.wait_for("wrote one", WAIT);
    t.line("write two");
    t.wait_for("wrote two", WAIT);
    assert_eq!(env.read("notes.txt"), "two");
    idle(&t);
    quit(&mut t);
    let evs = logged(&env);
    assert_eq!(count(&evs, "interaction.requested"), 1, "asked again");
    assert!(evs.iter().any(|e| e["name"] == "approval.decided"
        && e["payload"]["reason"] == "approved earlier in this session"));
}

#[test]
fn an_approval_allowed_once_is_asked_again() {
    let env = env_with(writes_one_then_two(), json!({}));
    let mut t = start(&env, &[]);
    t.line("write one");
    t.wait_for("Allow once", WAIT);
    t.send(b"1");
    t.wait_for("wrote one", WAIT);
    t.line("write two");
    t.wait_for("Allow once", WAIT);
    t.send(b"3");
    t.wait_for("denied", WAIT);
    assert_eq!(env.read("notes.txt"), "one");
}

#[test]
fn add_to_allowlist_writes_the_global_settings_after_a_confirmation() {
    let write = |path: &str, content: &str| json!({"text": "", "tool_calls": [call("write", json!({"path": path, "content": content}))]});
    let env = env_with(
        json!([
            write("notes.txt", "one"), {"text": "wrote one"},
            write("notes.txt", "two"), {"text": "wrote two"},
            write("other.txt", "x"), {"text": "wrote other"}
        ]),
        json!({"securityMode": {"mode": "allowlist", "allowlist": ["read"]}}),
    );
    let settings = env.home.path().join("settings.json");
    let mut t = start(&env, &[]);
    t.line("write one");
    let screen = t.wait_for("Add to the allowlist", WAIT);
    assert!(!screen.contains("for this session"), "{screen}");
    t.send(b"2");
    let confirm = t.wait_for("Matching calls then run without asking", WAIT);
    assert!(confirm.contains("write:notes.txt"), "{confirm}");
    t.send(b"y");
    t.wait_for("wrote one", WAIT);
    t.wait_for("added to the allowlist", WAIT);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        written["securityMode"]["allowlist"],
        json!(["read", "write:notes.txt"]),
        "{written}"
    );
    assert_eq!(written["active"]["provider"], "scripted", "other keys kept");
    // The entry applies at once: the same key is not asked again.
    t.line("write two");
    t.wait_for("wrote two", WAIT);
    assert_eq!(env.read("notes.txt"), "two");
    // Declining the confirmation still runs the call, once, and writes
    // nothing.
    t.line("write other");
    t.wait_for("Add to the allowlist", WAIT);
    t.send(b"l");
    t.wait_for("Matching calls then run without asking", WAIT);
    t.send(b"n");
    t.wait_for("wrote other", WAIT);
    assert_eq!(env.read("other.txt"), "x");
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        after["securityMode"]["allowlist"],
        json!(["read", "write:notes.txt"])
    );
    idle(&t);
    quit(&mut t);
    let evs = logged(&env);
    assert_eq!(count(&evs, "allowlist.added"), 1);
    assert_eq!(
        count(&evs, "interaction.requested"),
        4,
        "two approvals, two confirmations"
    );
}

/// `kill` (or a closed terminal) during a turn: the turn is cancelled,
/// loggers flush, the terminal is given back (main screen, cursor shown)
/// and the exit status says which signal ended it.
#[cfg(unix)]
#[test]
fn a_termination_signal_ends_the_session_cleanly_and_restores_the_terminal() {
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let env = env_with(
            json!([{"text": "", "tool_calls": [call("bash", json!({"command": "sleep 30"}))]}, {"text": "never"}]),
            json!({}),
        );
        let mut t = start(&env, &["--yolo"]);
        t.line("wait");
        t.wait_for("running…", WAIT);
        assert!(!t.restored(), "the UI is on the alternate screen");
        let sent = Instant::now();
        t.signal(signal);
        let code = t.wait_exit(WAIT);
        assert_eq!(code, Some(status), "signal {signal}");
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "{:?}",
            sent.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
        assert!(t.restored(), "terminal left raw:\n{}", t.contents());
        let evs = logged(&env);
        let end = evs
            .iter()
            .find(|e| e["name"] == "turn.end")
            .unwrap_or_else(|| panic!("no turn.end logged: {evs:?}"));
        assert_eq!(end["payload"]["status"], "cancelled", "{end}");
    }
}

#[test]
fn esc_stops_a_looping_tool() {
    let env = env_with(
        json!([{"text": "", "tool_calls": [call("bash", json!({"command": "while true; do :; done"}))]}, {"text": "never"}]),
        json!({}),
    );
    let mut t = start(&env, &["--yolo"]);
    t.line("spin");
    t.wait_for("running…", WAIT);
    std::thread::sleep(Duration::from_millis(300));
    let pressed = Instant::now();
    t.send(ESC);
    t.wait_for("[turn cancelled]", WAIT);
    let took = pressed.elapsed();
    eprintln!("Esc to turn cancelled on screen: {took:?}");
    // The target is 200 ms (the bench reports the number); this
    // bound only says the tool was stopped, not left to its timeout.
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(!t.contents().contains("never"));
}

/// A call reads as what it is doing: waiting for the person's approval
/// (not "running"), done, denied; a long one shows its time after a
/// second, and Esc shows it cancelled.
#[test]
fn a_tool_call_shows_what_it_waits_for() {
    let env = env_with(writes_one_then_two(), json!({}));
    let mut t = start(&env, &[]);
    t.line("write one");
    t.wait_for("Allow write", WAIT);
    let screen = t.wait_for("⎿ waiting for your approval", WAIT);
    assert!(!screen.contains("running…"), "{screen}");
    assert!(screen.contains("? waiting for your answer"), "{screen}");
    t.send(b"1");
    let screen = t.wait_for("wrote one", WAIT);
    assert!(!screen.contains("waiting for your approval"), "{screen}");
    t.line("write two");
    t.wait_for("Allow write", WAIT);
    t.send(b"3");
    t.wait_for("⎿ denied: interaction", WAIT);

    let env = env_with(
        json!([{"text": "", "tool_calls": [call("bash", json!({"command": "sleep 30"}))]}, {"text": "never"}]),
        json!({}),
    );
    let mut t = start(&env, &["--yolo"]);
    t.line("sleep");
    t.wait_for("⎿ running… 1s", WAIT);
    t.send(ESC);
    t.wait_for("⎿ cancelled", WAIT);
}

/// A turn that runs `sleep 1.5` and says "first turn done", then one that
/// repeats what it was sent.
fn a_slow_turn_then_an_echo() -> StudEnv {
    env_with(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "sleep 1.5"}))]},
            {"text": "first turn done"},
            {"text": "second turn got: {{last_user}}"}
        ]),
        json!({}),
    )
}

#[test]
fn a_follow_up_typed_during_a_turn_runs_after_it() {
    let env = a_slow_turn_then_an_echo();
    let mut t = start(&env, &["--yolo"]);
    t.line("first");
    t.wait_for("running…", WAIT);
    t.line("the follow-up");
    let screen = t.wait_for("1 queued", WAIT);
    assert!(!screen.contains("second turn got"), "{screen}");
    let screen = t.wait_for("second turn got: the follow-up", WAIT);
    let first = screen.find("first turn done").expect(&screen);
    let second = screen.find("second turn got").expect(&screen);
    assert!(first < second, "{screen}");
}

/// A Markdown command typed during a turn makes the next turn, as a
/// typed prompt does; it is not a command to run beside the turn.
#[test]
fn a_markdown_command_typed_during_a_turn_is_the_next_turn() {
    let env = a_slow_turn_then_an_echo();
    env.file(".claude/commands/shout.md", "Say $ARGUMENTS loudly.\n");
    std::fs::create_dir_all(env.project.path().join(".stud")).expect("mkdir .stud");
    env.ok(&["trust", "grant"]);
    let mut t = start(&env, &["--yolo"]);
    t.line("first");
    t.wait_for("running…", WAIT);
    t.line("/shout hello");
    let screen = t.wait_for("second turn got: Say hello loudly.", WAIT);
    assert!(!screen.contains("unknown command"), "{screen}");
    let first = screen.find("first turn done").expect(&screen);
    let second = screen.find("second turn got").expect(&screen);
    assert!(first < second, "{screen}");
}

/// While a turn runs, a turn-safe command answers at once (on the
/// session as the turn found it), one that is not is refused with a
/// message, and `/exit` stops the turn and ends the program.
#[test]
fn commands_typed_during_a_turn_run_now_or_are_refused() {
    let env = env_with(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "sleep 20"}))]},
            {"text": "never"}
        ]),
        json!({}),
    );
    let mut t = start(&env, &["--yolo"]);
    t.line("wait");
    t.wait_for("running…", WAIT);
    t.line("/tools");
    let screen = t.wait_for("web-fetch", WAIT);
    assert!(screen.contains("working"), "the turn still runs:\n{screen}");
    t.line("/compact");
    let screen = t.wait_for("cannot run while a turn is running", WAIT);
    assert!(screen.contains("working"), "{screen}");
    let asked = Instant::now();
    t.line("/exit");
    assert_eq!(t.wait_exit(WAIT), Some(0));
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    let evs = logged(&env);
    let statuses: Vec<&Value> = evs
        .iter()
        .filter(|e| e["name"] == "command.resulted")
        .map(|e| &e["payload"]["status"])
        .collect();
    assert_eq!(statuses, ["ok", "refused", "ok"], "{evs:?}");
    let end = evs
        .iter()
        .find(|e| e["name"] == "turn.end")
        .expect("turn.end");
    assert_eq!(end["payload"]["status"], "cancelled");
}

/// A command typed during a turn that ends before the command's turn to
/// run came is not lost: `/exit` queued behind a slow turn-safe command
/// still ends the program once both are done.
#[test]
fn a_command_queued_as_the_turn_ends_still_runs() {
    let env = env_with(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "sleep 1"}))]},
            {"text": "turn over"}
        ]),
        json!({}),
    );
    let dir = env.install("greeter");
    let manifest = dir.join("extension.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replace("[command]\n", "[command]\nturn-safe = true\n");
    std::fs::write(&manifest, text).unwrap();
    let mut t = start(&env, &["--yolo"]);
    t.line("wait");
    t.wait_for("running…", WAIT);
    // The spin runs past the turn's end (until its 2 s deadline); the
    // `/exit` behind it has not started when the turn ends.
    t.line("/greet spin");
    t.line("/exit");
    t.wait_for("turn over", WAIT);
    assert!(
        t.wait_exit(WAIT).is_some(),
        "the queued /exit was lost:\n{}",
        t.contents()
    );
    let evs = logged(&env);
    let commands: Vec<(&Value, &Value)> = evs
        .iter()
        .filter(|e| e["name"] == "command.resulted")
        .map(|e| (&e["payload"]["command"], &e["payload"]["status"]))
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
}

#[test]
fn a_steering_message_reaches_the_next_request_of_the_running_turn() {
    let env = env_with(
        json!([
            {"text": "", "tool_calls": [call("bash", json!({"command": "sleep 1.5"}))]},
            {"text": "the turn now sees: {{last_user}}"}
        ]),
        json!({}),
    );
    let mut t = start(&env, &["--yolo"]);
    t.line("start");
    t.wait_for("running…", WAIT);
    t.send(b"go left instead");
    std::thread::sleep(Duration::from_millis(50));
    t.send(CTRL_S);
    t.wait_for("the turn now sees: go left instead", WAIT);
    idle(&t);
    quit(&mut t);
    let evs = logged(&env);
    assert_eq!(count(&evs, "turn.start"), 1, "steering is not a new turn");
    assert!(
        evs.iter()
            .any(|e| e["name"] == "turn.steered" && e["payload"]["text"] == "go left instead")
    );
}

/// A resize just after the first frame is drawn redraws at the new size:
/// it once came before the input thread's first look at the terminal and
/// was lost, leaving the screen at the old size. (It failed every time
/// with that thread's start delayed by 1.5 s; without the delay the race
/// is narrow, and CI's load hit it.)
#[test]
fn a_resize_right_after_the_first_frame_is_not_lost() {
    let env = env_with(json!([]), json!({}));
    let mut t = Term::spawn(&env, &[], 100, 30);
    t.wait_for("/help", WAIT);
    // The old status line was on row 30: cut off at 20 rows until the UI
    // draws again.
    t.resize(120, 20);
    let screen = t.wait_for("/help", WAIT);
    let last = screen.lines().nth(19).unwrap_or_default();
    assert!(
        last.contains("/help"),
        "the status line is the last row:\n{screen}"
    );
}

#[test]
fn a_resize_redraws_without_losing_the_input() {
    let env = env_with(json!([]), json!({}));
    let mut t = start(&env, &[]);
    t.send(b"half-typed thought");
    t.wait_for("half-typed thought", WAIT);
    t.resize(70, 20);
    std::thread::sleep(Duration::from_millis(300));
    let screen = t.wait_for("half-typed thought", WAIT);
    let last = screen.lines().last().unwrap_or("");
    assert!(
        last.contains("scripted/scripted"),
        "status line not at the new bottom:\n{screen}"
    );
    assert!(screen.lines().all(|l| l.chars().count() <= 70), "{screen}");
}

#[test]
fn model_output_cannot_steer_the_terminal() {
    // A reply that tries to clear the screen, move the cursor and set the
    // title: the host renders cells and shows control characters as `?`.
    let env = env_with(
        json!([{"text": "before\u{1b}[2J\u{1b}[H\u{1b}]0;pwned\u{7}after"}]),
        json!({}),
    );
    let mut t = start(&env, &[]);
    t.line("hi");
    let screen = t.wait_for("after", WAIT);
    assert!(
        screen.contains("before"),
        "the screen was cleared:\n{screen}"
    );
    assert!(screen.contains("› hi"), "{screen}");
}

#[test]
fn piped_input_gets_the_line_console() {
    let env = env_with(json!([{"text": "line console reply"}]), json!({}));
    let o = env.run(&[], "hello\n");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("line console reply"), "{stdout}");
    assert!(
        !stdout.contains("\u{1b}[?1049h"),
        "switched to the alternate screen"
    );
}
