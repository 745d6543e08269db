//! What a session runs on and with: the first-run provider pick by key
//! variable, and extension sets (`--profile`, `--tools`, `--disable`)
//! recorded in the session and restored by `-c`.

use crate::common;

use std::process::Output;

use common::StudEnv;
use serde_json::{Value, json};

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn session_start(o: &Output) -> Value {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "session.start")
        .map(|v| v["payload"].clone())
        .unwrap_or_else(|| panic!("no session.start in {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn a_first_run_picks_the_provider_whose_key_is_set_and_says_so() {
    let env = StudEnv::new();
    env.settings(json!({}));
    let run = |vars: &[(&str, &str)]| {
        env.command(&["/model"])
            .envs(vars.iter().copied())
            .output()
            .unwrap()
    };
    // Anthropic, OpenAI, Gemini: in that order.
    let o = run(&[("OPENAI_API_KEY", "sk-test"), ("GEMINI_API_KEY", "g-test")]);
    assert!(o.status.success(), "{}", err(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("provider openai-compatible"), "{stdout}");
    assert!(
        err(&o).contains("because OPENAI_API_KEY is set"),
        "{}",
        err(&o)
    );
    let o = run(&[
        ("GEMINI_API_KEY", "g-test"),
        ("ANTHROPIC_API_KEY", "a-test"),
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("provider anthropic"));

    // No key: the offline demo, and the two lines that change it.
    let o = run(&[]);
    let e = err(&o);
    assert!(e.contains("offline demo provider `scripted`"), "{e}");
    assert!(
        e.contains("export ANTHROPIC_API_KEY=") && e.contains("\n  stud\n"),
        "{e}"
    );

    // A provider chosen in settings is not second-guessed.
    env.settings(json!({"active": {"provider": "scripted"}}));
    let o = run(&[("ANTHROPIC_API_KEY", "a-test")]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("provider scripted"));
    assert!(!err(&o).contains("offline demo") && !err(&o).contains("because"));
}

#[test]
fn a_profile_chooses_the_extension_set_and_continuing_keeps_it() {
    let env = StudEnv::new();
    env.script(
        json!([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}, {"text": "five"}]),
        json!({"profiles": {"review": {"tools": ["read", "grep"], "hooks": [], "mode": "allowlist"}}}),
    );
    let stream = |args: &[&str]| {
        let mut all = vec!["-p", "--output-format", "stream-json"];
        all.extend_from_slice(args);
        env.command(&all).output().unwrap()
    };
    let o = stream(&["--profile", "review", "--disable", "jsonl", "hi"]);
    assert!(o.status.success(), "{}", err(&o));
    let start = session_start(&o);
    assert_eq!(start["tools"], json!(["grep", "read"]));
    assert_eq!(start["mode"], "allowlist");
    assert_eq!(
        start["extension_set"],
        "profile review; tools read,grep; hooks none; without jsonl"
    );
    let id = start["session_id"].as_str().unwrap();
    let manifest = env
        .home
        .path()
        .join("data/filesystem")
        .join(id)
        .join("manifest.json");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    assert_eq!(manifest["extension_set"]["profile"], "review");
    assert_eq!(manifest["extension_set"]["tools"], json!(["read", "grep"]));

    // `-c` continues with the recorded set and the profile's mode...
    let o = stream(&["-c", "again"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(session_start(&o)["tools"], json!(["grep", "read"]));
    assert_eq!(session_start(&o)["mode"], "allowlist");
    // ...which the command line may tighten, never loosen.
    let o = stream(&["-c", "--yolo", "again"]);
    assert_eq!(session_start(&o)["mode"], "allowlist", "{}", err(&o));
    let o = stream(&["-c", "--mode", "ask", "again"]);
    assert_eq!(session_start(&o)["mode"], "ask", "{}", err(&o));
    // ...unless the command line chooses another.
    let o = stream(&["-c", "--tools", "read", "more"]);
    assert_eq!(session_start(&o)["tools"], json!(["read"]));

    // Without a set, every installed tool is offered.
    let o = stream(&["fresh"]);
    let tools = session_start(&o)["tools"].as_array().unwrap().len();
    assert!(tools > 5, "{tools}");
    assert!(session_start(&o).get("extension_set").is_none());
}

#[test]
fn a_misspelled_profile_or_extension_is_an_error_naming_it() {
    let env = StudEnv::new();
    env.scripted_settings(json!({"profiles": {"review": {"hooks": ["protect-pats"]}}}));
    let o = env
        .command(&["-p", "--tools", "reed", "hi"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o)
            .contains("--tools: no tool extension `reed` is installed; installed: ask-user, bash"),
        "{}",
        err(&o)
    );
    let o = env
        .command(&["-p", "--profile", "nope", "hi"])
        .output()
        .unwrap();
    assert!(err(&o).contains("no profile of that name") && err(&o).contains("defined: review"));
    let o = env
        .command(&["-p", "--profile", "review", "hi"])
        .output()
        .unwrap();
    assert!(
        err(&o).contains("profiles.review: no hook extension `protect-pats`"),
        "{}",
        err(&o)
    );
    let o = env
        .command(&["-p", "--disable", "nosuch", "hi"])
        .output()
        .unwrap();
    assert!(
        err(&o).contains("--disable: no extension `nosuch`"),
        "{}",
        err(&o)
    );
}
