//! What people bring from other agents, through the same authority stack
//! as the model's own calls: `@path` mentions attach a file as `read`
//! returns it, and a protected one is refused before anything is sent.

use crate::common;

use common::StudEnv;
use common::stream::events;
use serde_json::{Value, json};

/// The scripted model answers with the person's whole last message, so a
/// test sees exactly what reached it.
fn echoing() -> StudEnv {
    let env = StudEnv::new();
    env.script(json!([{"text": "got: {{last_user}}"}]), json!({}));
    env
}

#[test]
fn a_mentioned_file_is_attached_as_read_returns_it() {
    let env = echoing();
    env.file("notes.txt", "first line\nsecond line\n");
    let out = env.ok(&["run", "-p", "summarise @notes.txt please"]);
    assert!(out.contains("summarise @notes.txt please"), "{out}");
    assert!(out.contains("<file path=\"notes.txt\">"), "{out}");
    assert!(out.contains("second line"), "{out}");
}

/// `@.env` goes through `read`, so `protect-paths` refuses it: the prompt
/// is not sent, the error names the mention, and the secret is nowhere in
/// the session's files.
#[test]
fn a_protected_file_mention_is_refused_and_nothing_is_sent() {
    let env = echoing();
    env.file(".env", "API_TOKEN=sk-mentioned-0123456789\n");
    let out = env.run(
        &[
            "run",
            "-p",
            "--output-format",
            "stream-json",
            "look at @.env",
        ],
        "",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("@.env:") && stderr.contains("was not sent"),
        "{stderr}"
    );
    let evs: Vec<Value> = events(&String::from_utf8_lossy(&out.stdout));
    let denied = evs
        .iter()
        .any(|e| e["event"] == "approval.decided" && e["payload"]["decision"] == "deny");
    assert!(denied, "the guard decided: {evs:?}");
    assert!(
        !evs.iter().any(|e| e["event"] == "provider.request.started"),
        "a request went out"
    );
    assert!(
        env.files_containing("sk-mentioned-0123456789")
            .iter()
            .all(|f| f.ends_with(".env")),
        "{:?}",
        env.files_containing("sk-mentioned-0123456789")
    );
}

#[test]
fn a_missing_file_mention_refuses_the_prompt_naming_it() {
    let env = echoing();
    let out = env.run(&["run", "-p", "read @nowhere.txt"], "");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("@nowhere.txt:"), "{stderr}");
    // A handle is not a mention.
    let out = env.ok(&["run", "-p", "thanks @alice"]);
    assert!(out.contains("got: thanks @alice"), "{out}");
}

/// `!command` goes through `bash` and the authority stack: in the ask
/// mode the person is asked, and a no leaves everything as it was; a yes
/// runs it.
#[test]
fn a_shell_command_is_asked_in_ask_mode() {
    let env = echoing();
    std::fs::create_dir_all(env.project.path().join("victim")).unwrap();
    env.file("victim/keep.txt", "still here");
    let out = env.run(&["run", "!rm -rf victim"], "n\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Allow bash") || stderr.contains("Allow bash"),
        "asked: {stdout}{stderr}"
    );
    assert!(
        stderr.contains("!rm -rf victim did not run") && stderr.contains("declined"),
        "{stderr}"
    );
    assert_eq!(env.read("victim/keep.txt"), "still here");
    let out = env.run(&["run", "!rm -rf victim"], "y\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!env.project.path().join("victim").exists());
}

/// What a `!command` printed is shown and goes with the next prompt.
#[test]
fn a_shell_commands_output_reaches_the_next_prompt() {
    let env = echoing();
    let out = env.run(
        &["run", "--yolo"],
        "!echo hello-from-shell\nwhat did it say?\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("hello-from-shell"), "shown: {stdout}");
    let answer = stdout
        .split("got: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no answer: {stdout}"));
    assert!(answer.starts_with("what did it say?"), "{answer}");
    assert!(
        answer.contains("<shell-output command=\"echo hello-from-shell\"")
            && answer.contains("hello-from-shell"),
        "{answer}"
    );
}

/// A mention cannot reach outside the project: `read`'s sandbox refuses
/// a path that climbs out or is absolute, and the prompt is not sent.
#[test]
fn a_mention_outside_the_project_is_refused() {
    let env = echoing();
    let secret = env.home.path().join("outside.txt");
    std::fs::write(&secret, "sk-outside-0123456789").unwrap();
    let home_name = env.home.path().file_name().unwrap().to_string_lossy();
    for mention in [
        format!("@../{home_name}/outside.txt"),
        format!("@{}", secret.display()),
    ] {
        let out = env.run(&["run", "-p", &format!("read {mention}")], "");
        assert!(!out.status.success(), "{mention} was read");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("was not sent"), "{mention}: {stderr}");
    }
    let hits = env.files_containing("sk-outside-0123456789");
    assert_eq!(hits.len(), 1, "{hits:?}");
}

/// The first bytes of a PNG file, and a little more.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

/// `@shot.png` attaches the image (read through `read`) for a model whose
/// capabilities say vision; without vision the prompt is refused with a
/// message, and a model's own `read` of an image leaves the image out
/// instead of breaking the turn.
#[test]
fn an_image_mention_reaches_a_model_with_vision_and_is_refused_without() {
    let env = StudEnv::new();
    std::fs::write(env.project.path().join("shot.png"), PNG).expect("write png");
    env.script(json!([{"text": "saw: {{images}}"}]), json!({}));
    let out = env.ok(&["run", "-p", "what is in @shot.png"]);
    assert!(out.contains("saw: image/png ("), "{out}");

    let blind =
        json!({"providers": {"scripted": {"models": [{"id": "scripted", "vision": false}]}}});
    env.script(
        json!([
            {"text": "", "tool_calls": [common::call("read", json!({"path": "shot.png"}))]},
            {"text": "results: {{tool_results}}"}
        ]),
        blind,
    );
    let out = env.run(&["run", "-p", "what is in @shot.png"], "");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no vision"), "{stderr}");
    let out = env.ok(&["run", "-p", "--yolo", "look at the screenshot"]);
    assert!(
        out.contains("image left out: this model has no vision"),
        "{out}"
    );
}
