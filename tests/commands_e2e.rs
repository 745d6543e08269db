//! Slash commands end to end: the `stud` binary, the bundled command
//! components and fixtures, typed the way a person types them (a line on
//! a pseudo-terminal, or `stud -p "/cmd"`).

use crate::common;
use common::stream::events;

use std::process::Output;

use common::StudEnv;
use serde_json::{Value, json};

use common::BUNDLED_COMMANDS as BUNDLED;

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn env_with(turns: Value, settings: Value) -> StudEnv {
    let env = StudEnv::new();
    env.script(turns, settings);
    env
}

fn global_settings(env: &StudEnv) -> Value {
    let text = std::fs::read_to_string(env.home.path().join("settings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn help_lists_every_bundled_command_with_its_description() {
    let env = env_with(json!([]), json!({}));
    let text = env.ok(&["-p", "/help"]);
    for name in BUNDLED {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} missing from /help:\n{text}"
        );
    }
    assert!(text.contains("Summarise older messages now"), "{text}");
    assert!(text.contains("start with //"), "{text}");
    let one = env.ok(&["-p", "/help model"]);
    assert!(
        one.contains("/model [MODEL]") && one.contains("runs between turns"),
        "{one}"
    );
}

#[test]
fn an_unknown_command_is_an_error_with_close_matches_and_nothing_reaches_the_model() {
    let env = env_with(json!([{"text": "MODEL REPLY"}]), json!({}));
    let o = env
        .command(&["-p", "--output-format", "stream-json", "/hlep"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("unknown command /hlep"), "{}", err(&o));
    assert!(err(&o).contains("did you mean /help?"), "{}", err(&o));
    let evs = events(&out(&o));
    assert!(
        !evs.iter().any(|e| e["event"] == "turn.start"),
        "a turn started: {evs:?}"
    );
    assert!(!out(&o).contains("MODEL REPLY"));

    // Interactively, the session goes on: the next line is a prompt.
    let o = env.on_terminal("", "/nosuch\nhello\n");
    let screen = out(&o);
    assert!(screen.contains("unknown command /nosuch"), "{screen}");
    assert!(screen.contains("MODEL REPLY"), "{screen}");
}

#[test]
fn a_double_slash_sends_the_text_to_the_model_literally() {
    let env = env_with(json!([{"text": "you said <{{last_user}}>"}]), json!({}));
    let text = env.ok(&["-p", "//help me"]);
    assert!(text.contains("you said </help me>"), "{text}");
}

#[test]
fn commands_publish_dispatched_and_resulted_events() {
    let env = env_with(json!([]), json!({}));
    let o = env
        .command(&["-p", "--output-format", "stream-json", "/cost"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let evs = events(&out(&o));
    let dispatched = evs
        .iter()
        .find(|e| e["event"] == "command.dispatched")
        .expect("command.dispatched");
    assert_eq!(dispatched["payload"]["command"], "/cost");
    assert_eq!(dispatched["payload"]["extension"], "cost");
    let resulted = evs
        .iter()
        .find(|e| e["event"] == "command.resulted")
        .expect("command.resulted");
    assert_eq!(resulted["payload"]["status"], "ok");
    assert!(
        resulted["payload"]["message"]
            .as_str()
            .unwrap()
            .contains("tokens:")
    );
}

#[test]
fn model_switch_is_refused_when_the_model_cannot_serve_the_session() {
    let models = json!({"providers": {"scripted": {"models": [{"id": "big"}, {"id": "tiny", "toolCalling": false}]}}});
    let env = env_with(json!([{"text": "done"}]), models);
    let o = env.command(&["-p", "/model tiny"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(e.contains("tiny") && e.contains("still using big"), "{e}");

    // Without tools the small model serves: the switch is made.
    let text = env.ok(&["-p", "--no-tools", "/model tiny"]);
    assert!(text.contains("model: tiny"), "{text}");
    let shown = env.ok(&["-p", "/model"]);
    assert!(
        shown.contains("model: big") && shown.contains("tiny"),
        "{shown}"
    );
}

#[test]
fn compact_shortens_the_next_request() {
    let turns = json!([
        {"text": "one"},
        {"text": "two"},
        {"text": "three"},
        {"text": "SUMMARY OF THE EARLY TALK"},
        {"text": "the request had {{messages}} messages"}
    ]);
    let env = env_with(turns, json!({"compaction": {"keepRecent": 2}}));
    let o = env.on_terminal("", "a\nb\nc\n/compact\nd\n");
    let screen = out(&o);
    assert!(screen.contains("compacted:"), "{screen}");
    // Without /compact: a, one, b, two, c, three, d = 7 messages.
    let n: usize = screen
        .split("the request had ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {screen}"));
    assert!(n < 7, "the request after /compact had {n} messages");
}

#[test]
fn network_policy_allow_writes_the_global_grant_only_after_confirmation() {
    let env = env_with(json!([]), json!({}));
    // Declined: nothing written.
    let o = env.on_terminal("", "/network-policy allow web-fetch example.com\nn\n");
    assert!(out(&o).contains("not changed"), "{}", out(&o));
    assert!(global_settings(&env).get("network").is_none());

    let o = env.on_terminal("", "/network-policy allow web-fetch example.com\ny\n");
    assert!(out(&o).contains("may reach example.com"), "{}", out(&o));
    let s = global_settings(&env);
    assert_eq!(s["network"]["web-fetch"], json!(["example.com"]));
    // The rest of the file is kept.
    assert_eq!(s["providers"]["scripted"]["script-file"], "script.json");
    let shown = env.ok(&["-p", "/network-policy show"]);
    assert!(shown.contains("granted (global): example.com"), "{shown}");

    // Nobody to confirm: refused, nothing written.
    let o = env
        .command(&["-p", "/network-policy deny web-fetch example.com"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("confirm"), "{}", err(&o));
    assert_eq!(
        global_settings(&env)["network"]["web-fetch"],
        json!(["example.com"])
    );

    let o = env.on_terminal("", "/network-policy deny web-fetch example.com\ny\n");
    assert!(out(&o).contains("no longer reach"), "{}", out(&o));
    assert_eq!(global_settings(&env)["network"]["web-fetch"], json!([]));

    // Bad input names what was wrong.
    let o = env
        .command(&["-p", "/network-policy allow nosuch example.com"])
        .output()
        .unwrap();
    assert!(err(&o).contains("no extension `nosuch`"), "{}", err(&o));
}

#[test]
fn settings_disable_and_alias_commands_and_an_ambiguous_alias_asks() {
    let env = env_with(
        json!([]),
        json!({"commands": {"help": {"enabled": false}, "model": {"alias": ["m"]}, "cost": {"alias": ["x"]}, "mode": {"alias": ["x"]}}}),
    );
    let o = env.command(&["-p", "/help"]).output().unwrap();
    assert!(err(&o).contains("unknown command /help"), "{}", err(&o));
    assert!(env.ok(&["-p", "/m"]).contains("model: scripted"));

    let o = env.command(&["-p", "/x"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("ambiguous") && err(&o).contains("/cost") && err(&o).contains("/mode"),
        "{}",
        err(&o)
    );
    // A person picks one: options are in name order (cost, mode).
    let o = env.on_terminal("", "/x\n2\n");
    assert!(out(&o).contains("mode: ask"), "{}", out(&o));
}

#[test]
fn a_command_from_a_higher_scope_shadows_and_same_scope_duplicates_are_refused() {
    let env = env_with(json!([]), json!({}));
    // A global `/help` shadows the bundled one.
    let dir = env.install("greeter");
    let manifest = std::fs::read_to_string(dir.join("extension.toml")).unwrap();
    std::fs::write(
        dir.join("extension.toml"),
        manifest.replace("name = \"/greet\"", "name = \"/help\""),
    )
    .unwrap();
    env.scripted_settings(json!({"commands": {"greeter": {"name": "/help"}}}));
    let text = env.ok(&["-p", "/help"]);
    assert!(
        text.contains("hello from /help on model scripted"),
        "{text}"
    );

    // Two global extensions declaring one name: neither loads, both named.
    let twin = env.home.path().join("extensions").join("greeter-twin");
    std::fs::create_dir_all(&twin).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, twin.join(p.file_name().unwrap())).unwrap();
    }
    let m = std::fs::read_to_string(twin.join("extension.toml")).unwrap();
    std::fs::write(
        twin.join("extension.toml"),
        m.replace("id = \"greeter\"", "id = \"greeter-twin\""),
    )
    .unwrap();
    let o = env.command(&["-p", "/help"]).output().unwrap();
    let e = err(&o);
    assert!(
        e.contains("`greeter`") && e.contains("`greeter-twin`") && e.contains("once per scope"),
        "{e}"
    );
    // The conflict is above the bundled `/help`, which answers again.
    assert!(out(&o).contains("Commands:"), "{}", out(&o));
}

#[test]
fn a_component_built_for_contract_0_1_0_still_loads_and_runs() {
    let env = env_with(json!([]), json!({}));
    env.install("legacy-command");
    let text = env.ok(&["-p", "/legacy hi there"]);
    assert!(
        text.contains("legacy 0.1.0 command ran with: hi there"),
        "{text}"
    );
}

#[test]
fn a_trapping_or_runaway_command_does_not_take_the_session_down() {
    let env = env_with(json!([{"text": "STILL HERE"}]), json!({}));
    env.install("greeter");
    let o = env.on_terminal("", "/greet trap\n/greet spin\n/greet\nhello\n");
    let screen = out(&o);
    assert!(screen.contains("crashed"), "{screen}");
    assert!(
        screen.contains("timed out") || screen.contains("deadline"),
        "{screen}"
    );
    assert!(
        screen.contains("hello from /greet on model scripted"),
        "{screen}"
    );
    assert!(screen.contains("STILL HERE"), "{screen}");
}

#[test]
fn clear_starts_a_new_session_and_resume_returns_to_the_old_one() {
    let env = env_with(
        json!([{"text": "first reply"}, {"text": "second reply"}]),
        json!({}),
    );
    let o = env
        .command(&["-p", "--output-format", "json", "hello"])
        .output()
        .unwrap();
    let first: Value = serde_json::from_str(out(&o).lines().last().unwrap()).unwrap();
    let first_id = first["session_id"].as_str().unwrap().to_string();

    let o = env.on_terminal("-c", "/clear\n/sessions\n");
    let screen = out(&o);
    assert!(
        screen.contains("a new, empty session starts now"),
        "{screen}"
    );
    let current = screen
        .lines()
        .find(|l| l.contains("(this session)"))
        .unwrap_or_else(|| panic!("no current session in {screen}"));
    assert!(!current.contains(&first_id), "{screen}");
    assert!(screen.contains(&first_id), "{screen}");

    let o = env.on_terminal("", &format!("/resume {first_id}\n/sessions\n"));
    let screen = out(&o);
    assert!(
        screen.contains(&format!("continuing session {first_id}")),
        "{screen}"
    );
    let current = screen
        .lines()
        .find(|l| l.contains("(this session)"))
        .unwrap_or_else(|| panic!("no current session in {screen}"));
    assert!(current.contains(&first_id), "{screen}");
}

#[test]
fn save_and_close_ends_the_program_and_says_how_to_continue() {
    let env = env_with(
        json!([{"text": "reply one"}, {"text": "reply two"}]),
        json!({}),
    );
    let o = env.on_terminal("", "hello\n/save-and-close\nagain\n");
    let screen = out(&o);
    assert!(screen.contains("reply one"), "{screen}");
    assert!(screen.contains("stud --resume s"), "{screen}");
    assert!(!screen.contains("reply two"), "{screen}");
    assert!(o.status.success());
}

#[test]
fn reading_commands_show_the_session_and_provider_switches() {
    let env = env_with(json!([]), json!({}));
    let tools = env.ok(&["-p", "/tools"]);
    assert!(
        tools.contains("tools:") && tools.contains("read ") && tools.contains("[bash]"),
        "{tools}"
    );
    let mode = env.ok(&["-p", "--mode", "allowlist", "/mode"]);
    assert!(
        mode.contains("mode: allowlist") && mode.contains("fixed for the session"),
        "{mode}"
    );
    let trust = env.ok(&["-p", "/trust"]);
    assert!(trust.contains("no .stud folder"), "{trust}");
    let health = env.ok(&["-p", "/health"]);
    assert!(
        health.contains("scripted")
            && health.contains("calls")
            && health.contains("not loaded yet"),
        "{health}"
    );
    let reload = env.ok(&["-p", "/reload"]);
    assert!(
        reload.contains("looking for changed extensions"),
        "{reload}"
    );
    let providers = env.ok(&["-p", "/provider"]);
    assert!(
        providers.contains("provider: scripted") && providers.contains("openai-compatible"),
        "{providers}"
    );
    // A switch needs no network: the provider lists its models itself.
    let switched = env.ok(&["-p", "/provider openai-compatible"]);
    assert!(
        switched.contains("provider: openai-compatible with model"),
        "{switched}"
    );
    let o = env.command(&["-p", "/provider nosuch"]).output().unwrap();
    assert!(
        err(&o).contains("provider `nosuch` is not loaded")
            && err(&o).contains("still using scripted"),
        "{}",
        err(&o)
    );
}

/// Move the `greeter` fixture (command `/greet`) into the project's
/// `.stud/extensions/greeter/`, its manifest naming the command `name`
/// (the component takes its name from `commands.greeter.name`).
fn project_greeter(env: &StudEnv, name: &str) -> std::path::PathBuf {
    let dir = env.project.path().join(".stud/extensions/greeter");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::rename(env.install("greeter"), &dir).unwrap();
    let manifest = std::fs::read_to_string(dir.join("extension.toml")).unwrap();
    std::fs::write(
        dir.join("extension.toml"),
        manifest.replace("name = \"/greet\"", &format!("name = \"{name}\"")),
    )
    .unwrap();
    dir
}

/// The attack (issue 34, review two): a trusted project gains a command
/// while a session runs (an allowlisted `git pull` brings
/// `.stud/extensions/greeter/`). Before, `/reload` read the command set
/// again and the new, unreviewed command ran. A project command is usable
/// only when the project's trust review, as it is now, is the one the user
/// accepted and lists it: `/reload` leaves it out and says to run
/// `stud trust grant`.
#[test]
fn a_project_command_added_during_a_session_is_not_usable_after_reload() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let env = env_with(json!([]), json!({}));
    std::fs::create_dir_all(env.project.path().join(".stud")).unwrap();
    env.ok(&["trust", "grant"]);
    let mut child = env
        .command(&["run"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"/trust\n").unwrap();
    let mut screen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        screen.push_str(&line);
        screen.push('\n');
        if line.contains("stud trust revoke") {
            break;
        }
    }
    project_greeter(&env, "/greet");
    stdin.write_all(b"/reload\n/greet\n").unwrap();
    drop(stdin);
    for line in lines {
        screen.push_str(&line.unwrap());
        screen.push('\n');
    }
    let o = child.wait_with_output().unwrap();
    let all = format!("{screen}{}", err(&o));
    assert!(screen.contains("looking for changed extensions"), "{all}");
    assert!(
        !all.contains("hello from /greet"),
        "the new command ran: {all}"
    );
    assert!(
        all.contains("unknown command /greet")
            && all.contains("`greeter`")
            && all.contains("stud trust grant"),
        "{all}"
    );
}

/// The attack (issue 34, review two): a trusted project ships a command
/// named `/mode` that reports a made-up status, and its settings switch
/// the bundled `/trust` off and give the bundled `/model` another alias.
/// A project command never takes the name of one of the user's commands
/// (bundled or global; refused naming its folder), and `commands.*.enabled`
/// and `commands.*.alias` are read from the global settings only.
#[test]
fn a_project_cannot_shadow_disable_or_realias_the_users_commands() {
    let env = env_with(json!([]), json!({}));
    let dir = project_greeter(&env, "/mode");
    std::fs::write(
        env.project.path().join(".stud/settings.json"),
        json!({"commands": {
            "greeter": {"name": "/mode"},
            "trust": {"enabled": false},
            "model": {"alias": ["/mo"]}
        }})
        .to_string(),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let o = env.command(&["-p", "/mode"]).output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out(&o).contains("hello from"), "{}", out(&o));
    assert!(out(&o).contains("mode: ask"), "{}", out(&o));
    assert!(
        err(&o).contains("/mode") && err(&o).contains(&dir.display().to_string()),
        "{}",
        err(&o)
    );
    let o = env.command(&["-p", "/trust"]).output().unwrap();
    assert!(out(&o).contains("trusted"), "{}{}", out(&o), err(&o));
    assert!(
        err(&o).contains("commands.trust.enabled is only read from the global settings"),
        "{}",
        err(&o)
    );
    let o = env.command(&["-p", "/mo"]).output().unwrap();
    assert!(err(&o).contains("unknown command /mo"), "{}", err(&o));
}
