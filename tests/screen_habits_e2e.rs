//! The habits people bring, in the full-screen UI: Tab completes `@path`
//! over project files, Ctrl-R searches what was typed in earlier sessions
//! of the project, Ctrl-G edits the input in the person's editor. Driven
//! as a person would: `stud` on a pseudo-terminal, keys typed, the screen
//! read through a terminal emulator.

use crate::common;

use std::time::{Duration, Instant};

use common::StudEnv;
use common::pty::Term;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);
const CTRL_C: &[u8] = b"\x03";
const CTRL_G: &[u8] = b"\x07";
const CTRL_R: &[u8] = b"\x12";
const ESC: &[u8] = b"\x1b";

/// The scripted model answers with the person's last message.
fn echoing() -> StudEnv {
    let env = StudEnv::new();
    let script = json!({"repeat": true, "turns": [{"text": "got: {{last_user}}"}]});
    env.file("script.json", &script.to_string());
    env.scripted_settings(json!({}));
    env
}

fn start(env: &StudEnv, vars: &[(&str, &str)]) -> Term {
    let term = Term::spawn_with(env, &[], 100, 40, vars);
    term.wait_for("/help", WAIT);
    // The session is up (its provider on the status line) before keys.
    term.wait_for("scripted/scripted", WAIT);
    term
}

/// The input box's text (the rows between its frame lines).
fn input_box(t: &Term) -> String {
    let screen = t.contents();
    let rows: Vec<&str> = screen.lines().collect();
    let bottom = rows.iter().rposition(|r| r.trim_start().starts_with('└'));
    let top = bottom.and_then(|b| {
        rows[..b]
            .iter()
            .rposition(|r| r.trim_start().starts_with('┌'))
    });
    match (top, bottom) {
        (Some(t), Some(b)) => rows[t + 1..b]
            .iter()
            .map(|r| r.trim_matches(|c: char| c == '│' || c.is_whitespace()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn wait_input(t: &Term, want: &str) {
    let start = Instant::now();
    while input_box(t) != want {
        assert!(
            start.elapsed() < WAIT,
            "the input never read {want:?}; it reads {:?}:\n{}",
            input_box(t),
            t.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The screen once it shows every one of `needles` (a frame is read
/// while it is drawn, so one needle does not mean the rest are there).
fn wait_all(t: &Term, needles: &[&str]) -> String {
    let start = Instant::now();
    loop {
        let screen = t.contents();
        if needles.iter().all(|n| screen.contains(n)) {
            return screen;
        }
        assert!(
            start.elapsed() < WAIT,
            "the screen never showed {needles:?}:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

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

fn quit(t: &mut Term) {
    t.line("/exit");
    assert!(t.wait_exit(WAIT).is_some(), "/exit did not end the program");
}

#[test]
fn tab_completes_a_mention_over_project_files_but_not_ignored_ones() {
    let env = echoing();
    env.file("src/main.rs", "fn main() { println!(\"hi\") }\n");
    env.file("src/map.rs", "// map\n");
    env.file(".gitignore", "build/\n");
    env.file("build/main_generated.rs", "// generated\n");
    let mut t = start(&env, &[]);
    // One match: taken whole, with a space after it.
    t.send(b"see @src/mai");
    t.send(b"\t");
    wait_input(&t, "see @src/main.rs");
    t.send(CTRL_C);
    wait_input(&t, "");
    // A bare word: files anywhere whose name holds it, cut to what they
    // share and listed; the ignored one is not among them.
    t.send(b"@ma\t");
    wait_input(&t, "@src/ma");
    let screen = wait_all(&t, &["@src/map.rs", "@src/main.rs"]);
    assert!(!screen.contains("main_generated"), "{screen}");
    t.send(b"in\t");
    wait_input(&t, "@src/main.rs");
    // Sent, the mention attaches the file as `read` returns it.
    t.send(b"\r");
    t.wait_for("println", WAIT);
    idle(&t);
    // Nothing outside the project is offered.
    t.send(b"@../\t");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(input_box(&t), "@../");
    t.send(CTRL_C);
    wait_input(&t, "");
    quit(&mut t);
}

#[test]
fn ctrl_r_finds_what_was_typed_in_an_earlier_session_of_the_project() {
    let env = echoing();
    let mut t = start(&env, &[]);
    t.line("first prompt alpha");
    t.wait_for("got: first prompt alpha", WAIT);
    idle(&t);
    t.line("second prompt beta");
    t.wait_for("got: second prompt beta", WAIT);
    idle(&t);
    quit(&mut t);

    let mut t = start(&env, &[]);
    t.send(b"draft");
    t.send(CTRL_R);
    t.send(b"prompt");
    wait_input(&t, "second prompt beta");
    // Ctrl-R again: the next older match.
    t.send(CTRL_R);
    wait_input(&t, "first prompt alpha");
    assert!(t.contents().contains("search: prompt"), "{}", t.contents());
    // Esc puts back what was typed.
    t.send(ESC);
    wait_input(&t, "draft");
    t.send(CTRL_C);
    t.send(CTRL_R);
    t.send(b"alp");
    wait_input(&t, "first prompt alpha");
    // Enter takes the match into the input; a second Enter sends it.
    t.send(b"\r");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(input_box(&t), "first prompt alpha");
    t.send(b"\r");
    let screen = t.wait_for("got: first prompt alpha", WAIT);
    assert!(!screen.contains("search:"), "{screen}");
    idle(&t);
    quit(&mut t);
}

#[test]
fn ctrl_g_edits_the_input_in_the_persons_editor() {
    let env = echoing();
    // The person's "editor": adds to what it was given, as a person would.
    let editor = env.home.path().join("my-editor");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf ' and more from the editor' >> \"$1\"\n",
    )
    .expect("write editor");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let editor = editor.to_string_lossy().to_string();
    let mut t = start(&env, &[("EDITOR", &editor), ("VISUAL", "")]);
    t.send(b"draft");
    t.send(CTRL_G);
    wait_input(&t, "draft and more from the editor");
    // The screen is the UI's again, whole.
    wait_all(&t, &["scripted/scripted", "/help"]);
    t.send(b"\r");
    t.wait_for("got: draft and more from the editor", WAIT);
    idle(&t);
    quit(&mut t);

    // An editor that fails leaves the input as it was and says why.
    let mut t = start(&env, &[("EDITOR", "false"), ("VISUAL", "")]);
    t.send(b"keep me");
    t.send(CTRL_G);
    wait_all(&t, &["editor: `false` ended", "the input is unchanged"]);
    wait_input(&t, "keep me");
    t.send(CTRL_C);
    wait_input(&t, "");
    quit(&mut t);
}

/// `/copy` puts the last answer on the clipboard through OSC 52, written
/// by the host: the bytes on the terminal are the sequence with the
/// answer in base64, and nothing before an answer exists.
#[test]
fn copy_puts_the_last_answer_on_the_clipboard_through_osc_52() {
    use base64::Engine as _;
    let env = echoing();
    let mut t = start(&env, &[]);
    t.line("/copy");
    t.wait_for("there is no answer to copy yet", WAIT);
    assert!(
        !t.raw().windows(4).any(|w| w == b"\x1b]52"),
        "a clipboard write with no answer"
    );
    t.line("hello clipboard");
    t.wait_for("got: hello clipboard", WAIT);
    idle(&t);
    t.line("/copy");
    t.wait_for("copied the last answer", WAIT);
    let encoded = base64::engine::general_purpose::STANDARD.encode("got: hello clipboard");
    let want = format!("\x1b]52;c;{encoded}\x07");
    assert!(
        t.wait_raw(want.as_bytes(), WAIT),
        "no OSC 52 with the answer"
    );
    quit(&mut t);
}

/// Notifications are off unless the person's settings ask; on, a turn
/// that ran long enough (here: any) notifies when it ends and when it
/// waits for an approval.
#[test]
fn a_turn_notifies_when_it_ends_or_waits_only_when_asked_to() {
    let turns = json!([
        {"text": "first answer"},
        {"text": "", "tool_calls": [common::call("bash", json!({"command": "echo hi"}))]},
        {"text": "after the call"}
    ]);
    let env = StudEnv::new();
    env.script(turns.clone(), json!({}));
    let mut t = start(&env, &[]);
    t.line("go");
    t.wait_for("first answer", WAIT);
    idle(&t);
    quit(&mut t);
    let raw = t.raw();
    assert!(
        !raw.windows(3).any(|w| w == b"\x1b]9") && !raw.contains(&0x07),
        "a notification nobody asked for"
    );

    let env = StudEnv::new();
    env.script(
        turns,
        json!({"notifications": {"via": "osc9", "afterSeconds": 0}}),
    );
    let mut t = start(&env, &[]);
    t.line("go");
    t.wait_for("first answer", WAIT);
    // The seconds are the turn's own (0 on a quiet machine, more under
    // load): the notification is the prefix, a number, `s` and BEL.
    let prefix = b"\x1b]9;stud: turn done after ";
    assert!(
        t.wait_raw(prefix, WAIT),
        "no notification at the turn's end"
    );
    let raw = t.raw();
    let at = raw
        .windows(prefix.len())
        .position(|w| w == prefix)
        .expect("seen above")
        + prefix.len();
    let digits = raw[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    assert!(
        digits > 0 && raw[at + digits..].starts_with(b"s\x07"),
        "a malformed notification: {:?}",
        String::from_utf8_lossy(&raw[at - prefix.len()..(at + digits + 2).min(raw.len())])
    );
    idle(&t);
    t.line("run it");
    t.wait_for("Allow once", WAIT);
    assert!(
        t.wait_raw(b"\x1b]9;stud: bash waits for your approval\x07", WAIT),
        "no notification for the approval"
    );
    t.send(b"3");
    t.wait_for("after the call", WAIT);
    idle(&t);
    quit(&mut t);
}

/// Shift-Tab enters plan mode in the full-screen UI, and again leaves it.
#[test]
fn shift_tab_enters_and_leaves_plan_mode() {
    let env = echoing();
    let mut t = start(&env, &[]);
    t.send(b"\x1b[Z");
    t.wait_for("plan mode on", WAIT);
    t.send(b"\x1b[Z");
    t.wait_for("plan mode off", WAIT);
    quit(&mut t);
}
