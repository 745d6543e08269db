//! `stud acp` driven the way an editor drives it: a Node client on the
//! official ACP TypeScript SDK (`tests/fixtures/acp/client.mjs`) starts
//! the `stud` binary, opens a session and sends prompts; the scripted
//! provider answers; real tools change real files.

use crate::common;

use std::process::Command;

use common::StudEnv;
use serde_json::{Value, json};

fn tool(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

/// Run the test editor with `prompts`; every message it received, in
/// order.
fn editor(env: &StudEnv, prompts: &[&str]) -> Vec<Value> {
    editor_with(env, None, prompts, &[])
}

/// The same, loading session `load` instead of opening a new one.
fn editor_loading(env: &StudEnv, load: Option<&str>, prompts: &[&str]) -> Vec<Value> {
    editor_with(env, load, prompts, &[])
}

/// The same, with the editor's knobs in `vars` (`FS_BUFFERS`, `MODE`,
/// `PROBES`: see the client).
fn editor_with(
    env: &StudEnv,
    load: Option<&str>,
    prompts: &[&str],
    vars: &[(&str, String)],
) -> Vec<Value> {
    let out = Command::new("node")
        .arg(common::npm::acp_client())
        .env("STUD_BIN", env!("CARGO_BIN_EXE_stud"))
        .env("STUD_HOME", env.home.path())
        .env("STUD_CACHE_DIR", common::shared_cache())
        .env("PROJECT", env.project.path())
        .env("PROMPTS", json!(prompts).to_string())
        .env("LOAD_SESSION", load.unwrap_or_default())
        // Last, so a test may send another `PROJECT`.
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the editor failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // The agent ends its sessions and exits once the editor closes its
    // input.
    let exit = log.iter().find(|m| m["type"] == "exit");
    assert_eq!(exit.map(|m| &m["code"]), Some(&json!(0)), "{log:#?}");
    log
}

/// The id of the session the editor opened.
fn opened_id(log: &[Value]) -> String {
    log.iter()
        .find(|m| m["type"] == "session")
        .and_then(|m| m["sessionId"].as_str())
        .unwrap_or_else(|| panic!("no session opened: {log:#?}"))
        .to_string()
}

fn position(log: &[Value], what: impl Fn(&Value) -> bool) -> usize {
    log.iter()
        .position(what)
        .unwrap_or_else(|| panic!("not in {log:#?}"))
}

/// An edit asks the editor's permission (allowed once), streams a tool
/// call with its status updates and a diff, then the answer, and ends the
/// turn; a second prompt sees the history; a long tool call is cancelled
/// by the editor and the turn ends `cancelled`.
#[test]
fn an_editor_runs_turns_with_permission_diff_history_and_cancel() {
    let env = StudEnv::new();
    env.file("notes.txt", "hello world\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("e1", "edit", json!({"path": "notes.txt", "old_string": "world", "new_string": "editor"}))]},
            {"text": "edited the notes"},
            {"text": "I see {{messages}} messages"},
            {"text": "", "tool_calls": [tool("b1", "bash", json!({"command": "sleep 30"}))]},
            {"text": "never"}
        ]),
        json!({}),
    );
    let log = editor(&env, &["fix the notes", "what now", "cancel this one"]);
    let init = &log[0];
    assert_eq!(init["init"]["protocolVersion"], 1, "{init}");
    assert_eq!(init["init"]["agentInfo"]["name"], "stud");
    // The first turn, in order.
    let call = position(&log, |m| m["update"]["sessionUpdate"] == "tool_call");
    assert_eq!(log[call]["update"]["toolCallId"], "e1");
    assert_eq!(log[call]["update"]["kind"], "edit");
    let asked = position(&log, |m| m["type"] == "permission");
    assert_eq!(log[asked]["params"]["toolCall"]["toolCallId"], "e1");
    let kinds: Vec<&Value> = log[asked]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("allow_once"),
            &json!("allow_always"),
            &json!("reject_once")
        ]
    );
    let running = position(&log, |m| m["update"]["status"] == "in_progress");
    let done = position(&log, |m| m["update"]["status"] == "completed");
    let diff = log[done]["update"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .expect("a diff");
    assert_eq!(diff["oldText"], "world");
    assert_eq!(diff["newText"], "editor");
    assert!(diff["path"].as_str().unwrap().ends_with("notes.txt"));
    let text = position(&log, |m| {
        m["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    let stops: Vec<usize> = (0..log.len())
        .filter(|i| log[*i]["type"] == "stop")
        .collect();
    assert!(call < asked && asked < running && running < done && done < text && text < stops[0]);
    assert_eq!(log[stops[0]]["stopReason"], "end_turn");
    assert_eq!(env.read("notes.txt"), "hello editor\n");
    // The second turn sees the first.
    let second: String = log[stops[0]..stops[1]]
        .iter()
        .filter(|m| m["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(second, "I see 5 messages");
    assert_eq!(log[stops[1]]["stopReason"], "end_turn");
    // The third is cancelled while its tool runs.
    assert!(log[stops[1]..].iter().any(|m| m["type"] == "cancelling"));
    assert_eq!(log[stops[2]]["stopReason"], "cancelled");
    assert!(
        log[stops[2]]["ms"].as_u64().unwrap() < 20_000,
        "{}",
        log[stops[2]]
    );
}

/// The attack: `session/load` of a session kept for one folder with
/// another `cwd` replayed it there and re-homed it (the listings then
/// showed it under the other folder). A session loads only in its own
/// project root: another is a typed error naming the session's folder,
/// nothing is replayed, and the listing still shows the session where it
/// was.
#[test]
fn loading_a_session_of_another_folder_is_refused_and_changes_nothing() {
    let env = StudEnv::new();
    env.script(
        json!([{"text": "the first answer"}, {"text": "never"}]),
        json!({}),
    );
    let id = opened_id(&editor(&env, &["hello there"]));
    let listed =
        || -> Value { serde_json::from_str(&env.ok(&["session", "list", "--json"])).unwrap() };
    let before = listed();
    let other = tempfile::tempdir().unwrap();
    std::fs::copy(
        env.project.path().join("script.json"),
        other.path().join("script.json"),
    )
    .unwrap();
    let log = editor_with(
        &env,
        Some(&id),
        &["and then?"],
        &[("PROJECT", other.path().display().to_string())],
    );
    let refused = log
        .iter()
        .find(|m| m["type"] == "error" && m["at"] == "open")
        .unwrap_or_else(|| panic!("loaded in another folder: {log:#?}"));
    assert_eq!(
        refused["error"]["data"]["code"], "session-of-another-project",
        "{refused}"
    );
    let home = env.project.path().canonicalize().unwrap();
    let message = refused["error"]["data"]["message"].as_str().unwrap();
    assert!(
        message.contains(&home.display().to_string()) && message.contains(&id),
        "{message}"
    );
    assert!(
        !log.iter().any(|m| m["type"] == "update"),
        "the session was replayed: {log:#?}"
    );
    assert_eq!(listed(), before, "a refused load changed the listing");
}

/// `session/load` in a new agent process replays the kept conversation as
/// updates before it answers, and the next prompt continues it.
#[test]
fn loading_a_session_after_a_restart_replays_its_history() {
    let env = StudEnv::new();
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("r1", "read", json!({"path": "notes.txt"}))]},
            {"text": "the notes say hello"},
            {"text": "now {{messages}} messages"}
        ]),
        json!({}),
    );
    env.file("notes.txt", "hello\n");
    let id = opened_id(&editor(&env, &["read the notes"]));
    let log = editor_loading(&env, Some(&id), &["and then?"]);
    let loaded = position(&log, |m| m["type"] == "loaded");
    let replayed: Vec<(String, String)> = log[..loaded]
        .iter()
        .filter(|m| m["type"] == "update")
        .map(|m| {
            let u = &m["update"];
            let what = u["content"]["text"]
                .as_str()
                .or(u["toolCallId"].as_str())
                .unwrap_or_default();
            (
                u["sessionUpdate"].as_str().unwrap().to_string(),
                what.to_string(),
            )
        })
        .collect();
    let expected = [
        ("user_message_chunk", "read the notes"),
        ("tool_call", "r1"),
        ("tool_call_update", "r1"),
        ("agent_message_chunk", "the notes say hello"),
    ];
    assert_eq!(
        replayed,
        expected.map(|(a, b)| (a.to_string(), b.to_string())),
        "{log:#?}"
    );
    let answer: String = log[loaded..]
        .iter()
        .filter(|m| m["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "now 5 messages");
}

fn updates<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|m| m["update"]["sessionUpdate"] == kind)
        .map(|m| &m["update"])
        .collect()
}

/// An editor that offers its file system holds an unsaved buffer: `read`
/// shows the buffer, `edit` changes the buffer's text (its `old_string`
/// is only in the buffer) and hands the result back to the editor, and
/// the file on disk is left alone. A path out of the project never
/// reaches the editor.
#[test]
fn with_the_editors_file_system_tools_see_unsaved_buffers() {
    let env = StudEnv::new();
    env.file("notes.txt", "hello world\n");
    env.file("outside-marker.txt", "x");
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("r1", "read", json!({"path": "notes.txt"}))]},
            {"text": "", "tool_calls": [tool("e1", "edit", json!({"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}))]},
            {"text": "", "tool_calls": [tool("e2", "edit", json!({"path": "../escape.txt", "old_string": "a", "new_string": "b"}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    let buffers = json!({"notes.txt": "hello unsaved buffer\n"}).to_string();
    let log = editor_with(
        &env,
        None,
        &["fix the notes"],
        &[("FS_BUFFERS", buffers), ("MODE", "yolo".into())],
    );
    let done: Vec<&Value> = updates(&log, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .collect();
    assert_eq!(done[0]["toolCallId"], "r1", "{log:#?}");
    let shown = done[0]["content"][0]["content"]["text"].as_str().unwrap();
    assert!(shown.contains("hello unsaved buffer"), "{shown}");
    assert_eq!(done[1]["toolCallId"], "e1");
    assert_eq!(done[1]["status"], "completed", "{:#}", done[1]);
    let writes: Vec<&Value> = log.iter().filter(|m| m["type"] == "fs-write").collect();
    assert_eq!(writes.len(), 1, "{log:#?}");
    assert_eq!(writes[0]["content"], "hello edited buffer\n");
    assert_eq!(
        writes[0]["path"].as_str().unwrap(),
        env.project
            .path()
            .join("notes.txt")
            .canonicalize()
            .unwrap()
            .to_str()
            .unwrap()
    );
    assert_eq!(
        env.read("notes.txt"),
        "hello world\n",
        "the disk is the editor's to save"
    );
    // The escape failed before the editor was asked anything about it.
    assert_eq!(done[2]["toolCallId"], "e2");
    assert_eq!(done[2]["status"], "failed");
    assert!(
        log.iter()
            .filter(|m| m["type"] == "fs-read")
            .all(|m| m["path"].as_str().unwrap().ends_with("notes.txt")),
        "{log:#?}"
    );
    let stop = log.iter().rev().find(|m| m["type"] == "stop").unwrap();
    assert_eq!(stop["stopReason"], "end_turn");
}

/// The mode is chosen at `session/new` and reported as the session's
/// mode; `yolo` runs an edit without asking; switching later is refused
/// with a typed error.
#[test]
fn the_mode_is_chosen_when_the_session_opens_and_fixed_after() {
    let env = StudEnv::new();
    env.file("notes.txt", "hello world\n");
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("e1", "edit", json!({"path": "notes.txt", "old_string": "world", "new_string": "yolo"}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    let probes = json!([["session/set_mode", {"sessionId": "$SESSION", "modeId": "ask"}]]);
    let log = editor_with(
        &env,
        None,
        &["edit"],
        &[("MODE", "yolo".into()), ("PROBES", probes.to_string())],
    );
    let opened = &log[position(&log, |m| m["type"] == "session")];
    assert_eq!(opened["modes"]["currentModeId"], "yolo");
    let ids: Vec<&str> = opened["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ask", "allowlist", "yolo"]);
    let probe = &log[position(&log, |m| m["type"] == "probe")];
    assert_eq!(probe["error"]["code"], -32602, "{probe}");
    assert_eq!(probe["error"]["data"]["code"], "mode-fixed");
    assert!(!log.iter().any(|m| m["type"] == "permission"), "{log:#?}");
    assert_eq!(env.read("notes.txt"), "hello yolo\n");
    // An unknown mode is refused by name.
    let log = editor_with(&env, None, &[], &[("MODE", "sudo".into())]);
    let refused = &log[position(&log, |m| m["type"] == "error")];
    assert_eq!(
        refused["error"]["data"]["code"], "unknown-mode",
        "{refused}"
    );
    assert_eq!(refused["error"]["data"]["field"], "_meta.stud.mode");
}

/// The session's slash commands are advertised after it opens; a prompt
/// that starts with one runs it (the model is not asked), and a malformed
/// one is a typed error.
#[test]
fn slash_commands_are_advertised_and_run() {
    let env = StudEnv::new();
    env.script(json!([{"text": "the model answered"}]), json!({}));
    let log = editor(&env, &["/help", "/no!such", "hello"]);
    let advertised = updates(&log, "available_commands_update");
    assert_eq!(advertised.len(), 1, "{log:#?}");
    let names: Vec<&str> = advertised[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"help") && names.contains(&"model"),
        "{names:?}"
    );
    let stops: Vec<usize> = (0..log.len())
        .filter(|i| log[*i]["type"] == "stop" || log[*i]["type"] == "error")
        .collect();
    let help: String = updates(&log[..stops[0]], "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert!(help.contains("/model"), "{help}");
    assert_eq!(log[stops[0]]["stopReason"], "end_turn");
    assert_eq!(
        log[stops[1]]["error"]["data"]["code"], "invalid-command",
        "{:#}",
        log[stops[1]]
    );
    // The model's first answer went to the first real prompt.
    let answer: String = updates(&log[stops[1]..], "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "the model answered");
}

/// What an editor (or whoever speaks for it) sends is checked: a relative
/// folder, a session id that is a path, an unknown session; each is a
/// JSON-RPC error naming the field, with stud's code.
#[test]
fn bad_requests_are_typed_errors() {
    let env = StudEnv::new();
    env.script(json!([]), json!({}));
    let project = env.project.path().display().to_string();
    let probes = json!([
        ["session/new", {"cwd": "relative/dir", "mcpServers": []}],
        ["session/load", {"sessionId": "../../etc", "cwd": project, "mcpServers": []}],
        ["session/load", {"sessionId": "s0000", "cwd": project, "mcpServers": []}],
        ["session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}],
    ]);
    let log = editor_with(&env, None, &[], &[("PROBES", probes.to_string())]);
    let errors: Vec<&Value> = log
        .iter()
        .filter(|m| m["type"] == "probe")
        .map(|m| &m["error"])
        .collect();
    assert_eq!(errors.len(), 4, "{log:#?}");
    assert_eq!(errors[0]["code"], -32602);
    assert_eq!(errors[0]["data"]["code"], "cwd-not-absolute");
    assert_eq!(errors[0]["data"]["field"], "cwd");
    assert_eq!(errors[1]["data"]["code"], "not-a-session-id");
    assert_eq!(errors[2]["code"], -32002, "{:#}", errors[2]);
    assert_eq!(errors[3]["code"], -32002);
    assert_eq!(errors[3]["data"]["code"], "session-not-found");
}

/// A folder the user never trusted cannot loosen stud by what its `.stud`
/// says: its settings asking for `yolo` are not read, so an edit still
/// asks the editor.
#[test]
fn an_untrusted_projects_settings_do_not_apply() {
    let env = StudEnv::new();
    env.file("notes.txt", "hello world\n");
    std::fs::create_dir_all(env.project.path().join(".stud")).unwrap();
    env.file(
        ".stud/settings.json",
        &json!({"securityMode": {"mode": "yolo"}}).to_string(),
    );
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("e1", "edit", json!({"path": "notes.txt", "old_string": "world", "new_string": "x"}))]},
            {"text": "done"}
        ]),
        json!({}),
    );
    let log = editor(&env, &["edit"]);
    let opened = &log[position(&log, |m| m["type"] == "session")];
    assert_eq!(opened["modes"]["currentModeId"], "ask", "{opened}");
    assert!(log.iter().any(|m| m["type"] == "permission"), "{log:#?}");
}

/// An MCP server the editor passes is used like a configured one, under
/// the same trust rules: the first session asks (as a permission request)
/// before starting it, the model's call of its tool runs, and the next
/// session in that project starts it without asking again.
#[test]
fn mcp_servers_from_the_editor_are_trusted_once_then_used() {
    let env = StudEnv::new();
    let echo = |id: &str| json!({"text": "", "tool_calls": [tool(id, "mcp__everything__echo", json!({"message": "via the editor"}))]});
    env.script(
        json!([echo("m1"), {"text": "echoed"}, echo("m2"), {"text": "again"}]),
        json!({}),
    );
    let servers = json!([{
        "name": "everything",
        "command": common::npm::bin("mcp-server-everything"),
        "args": ["stdio"],
        "env": []
    }])
    .to_string();
    let vars = [("MCP_SERVERS", servers), ("MODE", "yolo".to_string())];
    let log = editor_with(&env, None, &["echo"], &vars);
    let asked: Vec<&Value> = log.iter().filter(|m| m["type"] == "permission").collect();
    assert_eq!(asked.len(), 1, "{log:#?}");
    let title = asked[0]["params"]["toolCall"]["title"].as_str().unwrap();
    assert!(
        title.contains("MCP server `everything`") && title.contains("editor"),
        "{title}"
    );
    let done = updates(&log, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "completed")
        .unwrap_or_else(|| panic!("{log:#?}"))
        .clone();
    assert!(
        done["content"].to_string().contains("via the editor"),
        "{done}"
    );
    let log = editor_with(&env, None, &["echo again"], &vars);
    assert!(!log.iter().any(|m| m["type"] == "permission"), "{log:#?}");
    assert!(
        updates(&log, "tool_call_update")
            .iter()
            .any(|u| u["status"] == "completed"),
        "{log:#?}"
    );
    // A transport stud does not speak is refused by name.
    let sse =
        json!([{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}]);
    let log = editor_with(&env, None, &[], &[("MCP_SERVERS", sse.to_string())]);
    let refused = &log[position(&log, |m| m["type"] == "error")];
    assert_eq!(
        refused["error"]["data"]["code"], "mcp-transport-unsupported",
        "{refused}"
    );
    // A server id with `__` (it would look like another server's tools to
    // an allowlist entry) is refused by name.
    let spoof = json!([{"name": "everything__x", "command": common::npm::bin("mcp-server-everything"), "args": ["stdio"], "env": []}]);
    let log = editor_with(&env, None, &[], &[("MCP_SERVERS", spoof.to_string())]);
    let refused = &log[position(&log, |m| m["type"] == "error")];
    assert_eq!(
        refused["error"]["data"]["code"], "invalid-mcp-server",
        "{refused}"
    );
    let message = refused["error"]["data"]["message"].as_str().unwrap();
    assert!(
        message.contains("`everything__x`") && message.contains("`__`"),
        "{message}"
    );
}

/// With a state machine attached, the editor is shown its stages as the
/// plan when the session opens, and each stage's progress as it runs.
#[test]
fn a_state_machines_stages_are_the_plan() {
    let env = StudEnv::new();
    crate::workflow_e2e::configure(
        &env,
        json!({
            "entry": "one",
            "stages": [{"id": "one", "allowedTools": []}, {"id": "two", "allowedTools": []}],
            "next": {"one": {"stages": ["two"]}}
        }),
        json!({
            "one": [{"text": "", "tool_calls": [tool("a", "done", json!({"step": 1}))]}],
            "two": [{"text": "", "tool_calls": [tool("b", "done", json!({"step": 2}))]}]
        }),
        json!({"active": {"stateMachine": "workflow"}}),
    );
    let log = editor(&env, &["build the thing"]);
    let plans: Vec<Vec<(String, String)>> = updates(&log, "plan")
        .iter()
        .map(|u| {
            u["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["content"].as_str().unwrap().to_string(),
                        e["status"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .collect();
    let at = |one: &str, two: &str| {
        vec![
            ("stage one".to_string(), one.to_string()),
            ("stage two".to_string(), two.to_string()),
        ]
    };
    assert_eq!(plans.first(), Some(&at("pending", "pending")), "{log:#?}");
    let step = |p: &Vec<(String, String)>| plans.iter().position(|q| q == p);
    let started =
        step(&at("in_progress", "pending")).unwrap_or_else(|| panic!("{plans:?}\n{log:#?}"));
    let second = step(&at("completed", "in_progress")).expect("stage two started");
    assert!(started < second);
    assert_eq!(
        plans.last(),
        Some(&at("completed", "completed")),
        "{plans:?}"
    );
    let opened = position(&log, |m| m["type"] == "session");
    let first_plan = position(&log, |m| m["update"]["sessionUpdate"] == "plan");
    assert!(
        opened < first_plan,
        "the plan comes after the editor knows the session"
    );
}

/// An image in the prompt reaches the model with the text (the scripted
/// model has vision and says what it got); an image type stud does not
/// send is refused by name.
#[test]
fn prompt_images_reach_a_model_with_vision() {
    let env = StudEnv::new();
    env.script(json!([{"text": "saw {{images}}"}]), json!({}));
    let png = "iVBORw0KGgoAAAANSUhEUg==";
    let probes = json!([["session/prompt", {"sessionId": "$SESSION", "prompt": [
        {"type": "text", "text": "look"},
        {"type": "image", "mimeType": "text/html", "data": "PGI+"}
    ]}]]);
    let log = editor_with(
        &env,
        None,
        &["what is this?"],
        &[("IMAGE", png.into()), ("PROBES", probes.to_string())],
    );
    let init = &log[0]["init"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(init["image"], true, "{init}");
    let probe = &log[position(&log, |m| m["type"] == "probe")];
    assert_eq!(
        probe["error"]["data"]["code"], "image-type-unsupported",
        "{probe}"
    );
    let answer: String = updates(&log, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        answer,
        format!("saw image/png ({} base64 chars)", png.len())
    );
}

/// A turn that changed files shows, on `session/load`, as a finished
/// `edit` tool call after its messages whose locations are those files
/// (what editors show for "these files changed"; `/undo` takes them back).
#[test]
fn a_loaded_session_marks_the_files_each_turn_changed() {
    let env = StudEnv::new();
    env.script(
        json!([
            {"text": "", "tool_calls": [tool("b1", "bash", json!({"command": "echo made > made.txt && rm gone.txt"}))]},
            {"text": "changed them"},
            {"text": "still here"}
        ]),
        json!({}),
    );
    env.file("gone.txt", "bye\n");
    let out = env.on_terminal("run --yolo", "change things\n");
    assert!(String::from_utf8_lossy(&out.stdout).contains("changed them"));
    let list: Value = serde_json::from_str(&env.ok(&["session", "list", "--json"])).expect("json");
    let id = list[0]["session_id"].as_str().expect("id").to_string();
    let log = editor_loading(&env, Some(&id), &["and then?"]);
    let loaded = position(&log, |m| m["type"] == "loaded");
    let updates: Vec<&Value> = log[..loaded]
        .iter()
        .filter(|m| m["type"] == "update")
        .map(|m| &m["update"])
        .collect();
    let kinds: Vec<&str> = updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "tool_call"
        ],
        "{log:#?}"
    );
    let mark = updates[4];
    assert_eq!(mark["kind"], "edit");
    assert_eq!(mark["status"], "completed");
    let project = env.project.path().canonicalize().expect("canonical");
    let paths: Vec<&str> = mark["locations"]
        .as_array()
        .expect("locations")
        .iter()
        .map(|l| l["path"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        paths,
        [
            project.join("gone.txt").display().to_string(),
            project.join("made.txt").display().to_string()
        ],
        "{mark:#}"
    );
}
