//! The three front ends (the line console, the full-screen UI, an editor
//! over ACP) go through one front door: the same lines, typed or sent,
//! come to the same messages for the model and the same refusals. The
//! lines use an MCP server's prompt (`/mcp__server__prompt`) and resource
//! (`@server:uri`), which an editor once could not reach.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::StudEnv;
use common::pty::Term;
use serde_json::{Value, json};

const URI: &str = "demo://resource/static/document/architecture.md";
const WAIT: Duration = Duration::from_secs(60);

/// What is typed, in order: a server's prompt, the same prompt missing its
/// required argument (refused, nothing sent), a prompt naming a resource,
/// a plain prompt and a command.
fn lines() -> Vec<String> {
    vec![
        "/mcp__everything__args-prompt Austin state=TX".into(),
        "/mcp__everything__args-prompt".into(),
        format!("summarise @everything:{URI} please"),
        "plain words".into(),
    ]
}

/// A home and project whose model repeats what it saw, with the
/// `everything` MCP server configured and trusted.
fn env() -> StudEnv {
    let answer = json!({"text": "model saw: {{last_user}}"});
    env_with(json!([answer, answer, answer, answer]))
}

/// A home and project whose model plays `turns`, with the `everything`
/// MCP server configured and trusted.
fn env_with(turns: Value) -> StudEnv {
    let env = StudEnv::new();
    env.script(
        turns,
        json!({"mcpServers": {"everything": {
            "command": common::npm::bin("mcp-server-everything"),
            "args": ["stdio"]
        }}}),
    );
    env.ok(&["mcp", "trust", "everything"]);
    env
}

/// The full-screen UI, once its input box is up and the server is
/// connected (servers start in the background: `/mcp` until it is).
fn screen_with_server(env: &StudEnv, args: &[&str]) -> Term {
    let mut t = Term::spawn(env, args, 200, 60);
    t.wait_for("/help", WAIT);
    for _ in 0..60 {
        t.line("/mcp");
        if t.shows_within("everything  connected", Duration::from_secs(1)) {
            break;
        }
    }
    t
}

/// The text of every user message the one session in `env` recorded.
fn user_messages(env: &StudEnv) -> Vec<String> {
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list:#}");
    user_messages_so_far(env)
}

/// The same while the session may not have been saved yet.
fn user_messages_so_far(env: &StudEnv) -> Vec<String> {
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap();
    let sessions = list.as_array().expect("a list");
    if sessions.is_empty() {
        return Vec::new();
    }
    let id = sessions[0]["session_id"].as_str().expect("an id");
    let shown = env.ok(&["session", "show", id, "--json"]);
    let mut out = Vec::new();
    for value in serde_json::Deserializer::from_str(&shown).into_iter::<Value>() {
        let record = value.expect("JSON");
        if record["type"] != "message" || record["message"]["role"] != "user" {
            continue;
        }
        let text: Vec<&str> = record["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|part| part["text"].as_str())
            .collect();
        out.push(text.join("\n"));
    }
    out
}

fn line_console(env: &StudEnv) -> String {
    // The servers start in the background: `/mcp` until it is connected.
    let mut steps: Vec<(String, &str)> = vec![("/mcp\n".into(), "everything  connected")];
    for line in lines() {
        steps.push((format!("{line}\n"), ""));
    }
    steps.push(("/exit\n".into(), ""));
    let steps: Vec<(&str, &str)> = steps.iter().map(|(l, u)| (l.as_str(), *u)).collect();
    let out = env.on_terminal_steps("", &steps);
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

fn full_screen(env: &StudEnv) -> String {
    let mut t = screen_with_server(env, &[]);
    let mut seen = String::new();
    // How many user messages the session holds once each line is done
    // (the refused line adds none).
    for ((line, recorded), shown) in
        lines()
            .iter()
            .zip([1, 1, 2, 3])
            .zip(["", "needs city", "", ""])
    {
        t.line(line);
        let start = std::time::Instant::now();
        while !(user_messages_so_far(env).len() == recorded
            && !t.contents().contains("working")
            && t.contents().contains(shown))
        {
            assert!(
                start.elapsed() < WAIT,
                "`{line}` never ended:\n{}",
                t.contents()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        seen.push_str(&t.contents());
    }
    t.line("/exit");
    assert!(
        t.wait_exit(WAIT).is_some(),
        "/exit did not end the program:\n{}",
        t.contents()
    );
    seen
}

fn editor(env: &StudEnv) -> Vec<Value> {
    let out = Command::new("node")
        .arg(common::npm::acp_client())
        .env("STUD_BIN", env!("CARGO_BIN_EXE_stud"))
        .env("STUD_HOME", env.home.path())
        .env("STUD_CACHE_DIR", common::shared_cache())
        .env("PROJECT", env.project.path())
        .env("PROMPTS", json!(lines()).to_string())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the editor failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn the_same_lines_do_the_same_through_every_front_end() {
    let console_env = env();
    let console = line_console(&console_env);
    let screen_env = env();
    let screen = full_screen(&screen_env);
    let editor_env = env();
    let log = editor(&editor_env);

    let from_console = user_messages(&console_env);
    let from_screen = user_messages(&screen_env);
    let from_editor = user_messages(&editor_env);
    // What the model was sent: the prompt's text, the line with the
    // resource attached below it (marked untrusted), the plain line.
    assert_eq!(from_console.len(), 3, "{from_console:#?}\n{console}");
    assert!(
        from_console[0].contains("What's weather in Austin, TX?"),
        "{from_console:#?}"
    );
    assert!(
        from_console[1].starts_with(&format!("summarise @everything:{URI} please"))
            && from_console[1].contains(&format!(
                "<mcp-resource server=\"everything\" uri=\"{URI}\" trust=\"untrusted"
            )),
        "{from_console:#?}"
    );
    assert_eq!(from_console[2], "plain words");
    assert_eq!(
        from_screen, from_console,
        "the full-screen UI differs:\n{screen}"
    );
    assert_eq!(from_editor, from_console, "the editor differs:\n{log:#?}");

    // The line missing its argument is refused the same way, naming it.
    assert!(console.contains("needs city"), "{console}");
    assert!(screen.contains("needs city"), "{screen}");
    let errors: Vec<&Value> = log
        .iter()
        .filter(|m| m["type"] == "error" && m["at"] == "prompt")
        .collect();
    assert_eq!(errors.len(), 1, "{log:#?}");
    let error = errors[0]["error"].to_string();
    assert!(
        error.contains("needs city") && error.contains("invalid-command"),
        "{error}"
    );
    let stops = log.iter().filter(|m| m["type"] == "stop").count();
    assert_eq!(stops, 3, "{log:#?}");
}

/// A server's prompt typed while a turn runs is the next turn, as a typed
/// prompt is: it is not a command to run beside the turn (it once went
/// there and was "unknown command" whenever a line came before the turn
/// had ended).
#[test]
fn a_server_prompt_typed_during_a_turn_is_the_next_turn() {
    let env = env_with(json!([
        {"text": "", "tool_calls": [common::call("bash", json!({"command": "sleep 2"}))]},
        {"text": "first turn done"},
        {"text": "model saw: {{last_user}}"}
    ]));
    let mut t = screen_with_server(&env, &["--yolo"]);
    t.line("wait");
    t.wait_for("running…", WAIT);
    t.line("/mcp__everything__args-prompt Austin state=TX");
    let screen = t.wait_for("model saw: What's weather in Austin, TX?", WAIT);
    assert!(!screen.contains("unknown command"), "{screen}");
    let first = screen.find("first turn done").expect(&screen);
    let second = screen.find("model saw: What's").expect(&screen);
    assert!(first < second, "{screen}");
    assert_eq!(user_messages(&env).len(), 2);
}
