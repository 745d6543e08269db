//! The `socket` capability (contract 0.1.4) as a user meets it: a tool
//! whose manifest asks for `sockets` talks to a TCP server the test starts
//! on loopback, only within its grant. A `*:port` entry needs the person's
//! exact `host:port` in their global settings; loopback (an internal
//! address) is refused on the manifest's word alone; a project's settings
//! cannot grant; another port is refused; each refusal names what would
//! allow it, and the server sees no connection it was not meant to.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::common;
use common::stream::events;
use common::{StudEnv, call};
use serde_json::{Value, json};

/// A server that answers one read with `echo: <what it read>`, then
/// closes; it counts the connections it accepted.
fn echo_server() -> (u16, Arc<Mutex<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(Mutex::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            *count.lock().unwrap() += 1;
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap_or(0);
            let _ = s.write_all(format!("echo: {}", String::from_utf8_lossy(&buf[..n])).as_bytes());
        }
    });
    (port, accepted)
}

/// The probe installed with `sockets` as given.
fn install(env: &StudEnv, sockets: &str) {
    let dir = env.install("socket-probe");
    let manifest = dir.join("extension.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("sockets = [\"*:7\"]", &format!("sockets = [{sockets}]")),
    )
    .unwrap();
}

/// One `probe` call to `port`; the tool's output or its failure message.
fn probe(env: &StudEnv, port: u16, tls: bool, settings: Value) -> Result<String, String> {
    env.script(
        json!([
            {"text": "", "tool_calls": [call("probe", json!({"host": "127.0.0.1", "port": port, "tls": tls, "send": "hello"}))]},
            {"text": "done"}
        ]),
        settings,
    );
    let out = env.ok(&[
        "run",
        "-p",
        "--yolo",
        "--output-format",
        "stream-json",
        "probe it",
    ]);
    let evs = events(&out);
    if let Some(ok) = evs.iter().find(|e| e["event"] == "tool.succeeded") {
        return Ok(ok["payload"]["output"].as_str().unwrap().to_string());
    }
    let failed = evs
        .iter()
        .find(|e| e["event"] == "tool.failed")
        .unwrap_or_else(|| panic!("no tool event: {out}"));
    Err(failed["payload"]["message"].as_str().unwrap().to_string())
}

#[test]
fn a_star_grant_needs_the_persons_exact_host_and_port() {
    let (port, accepted) = echo_server();
    let env = StudEnv::new();
    install(&env, &format!("\"*:{port}\""));
    let err = probe(&env, port, false, json!({})).unwrap_err();
    assert!(
        err.contains(&format!(
            "may not connect to `127.0.0.1:{port}`: it is not granted"
        )) && err.contains(&format!(
            "\"sockets\": {{\"socket-probe\": [\"127.0.0.1:{port}\"]}}"
        )),
        "{err}"
    );
    assert_eq!(
        *accepted.lock().unwrap(),
        0,
        "a refused call reached the server"
    );

    let grant = json!({"sockets": {"socket-probe": [format!("127.0.0.1:{port}")]}});
    assert_eq!(
        probe(&env, port, false, grant.clone()).unwrap(),
        "got: echo: hello"
    );
    assert_eq!(*accepted.lock().unwrap(), 1);

    // Another port on the same host is another grant.
    let (other, other_accepted) = echo_server();
    let err = probe(&env, other, false, grant.clone()).unwrap_err();
    assert!(err.contains("it is not granted"), "{err}");
    assert_eq!(*other_accepted.lock().unwrap(), 0);

    // TLS is asked for, and this server does not speak it: a clear failure.
    let err = probe(&env, port, true, grant).unwrap_err();
    assert!(
        err.contains(&format!("TLS with `127.0.0.1:{port}` failed")),
        "{err}"
    );
}

#[test]
fn loopback_on_the_manifests_word_alone_is_refused_and_a_project_cannot_grant() {
    let (port, accepted) = echo_server();
    let env = StudEnv::new();
    install(&env, &format!("\"127.0.0.1:{port}\""));
    let err = probe(&env, port, false, json!({})).unwrap_err();
    assert!(
        err.contains("internal address 127.0.0.1, which is refused unless you grant exactly"),
        "{err}"
    );
    assert_eq!(*accepted.lock().unwrap(), 0);

    // A trusted project's settings grant nothing: `sockets` is the
    // person's own (global only).
    let stud = env.project.path().join(".stud");
    std::fs::create_dir_all(&stud).unwrap();
    std::fs::write(
        stud.join("settings.json"),
        json!({"sockets": {"socket-probe": [format!("127.0.0.1:{port}")]}}).to_string(),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let err = probe(&env, port, false, json!({})).unwrap_err();
    assert!(err.contains("internal address"), "{err}");
    assert_eq!(*accepted.lock().unwrap(), 0);

    // The person's own grant opens it.
    let grant = json!({"sockets": {"socket-probe": [format!("127.0.0.1:{port}")]}});
    assert_eq!(probe(&env, port, false, grant).unwrap(), "got: echo: hello");
}

#[test]
fn only_tools_and_session_stores_may_ask_for_sockets() {
    let env = StudEnv::new();
    let dir = env.install("socket-probe");
    let manifest = dir.join("extension.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("kind = \"tool\"", "kind = \"hook\""),
    )
    .unwrap();
    let out = env.run(&["ext", "list"], "");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("kind = \"hook\" extensions may not open sockets; only tool and session-store extensions may"),
        "{said}"
    );
}

/// The person's grant is for their own extension of that id: a trusted
/// project that brings an extension under the same id (asking `*:port`)
/// does not inherit it, and reaches nothing.
#[test]
fn a_projects_extension_of_the_same_id_does_not_get_the_persons_grant() {
    let (port, accepted) = echo_server();
    let env = StudEnv::new();
    let stud = env.project.path().join(".stud");
    let dir = common::install_fixture(&stud, "socket-probe");
    let manifest = dir.join("extension.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("sockets = [\"*:7\"]", &format!("sockets = [\"*:{port}\"]")),
    )
    .unwrap();
    env.ok(&["trust", "grant"]);
    let grant = json!({"sockets": {"socket-probe": [format!("127.0.0.1:{port}")]}});
    let err = probe(&env, port, false, grant).unwrap_err();
    assert!(err.contains("it is not granted"), "{err}");
    assert_eq!(
        *accepted.lock().unwrap(),
        0,
        "the project's extension used the person's grant"
    );
}
