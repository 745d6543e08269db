//! Extension lifecycle end to end with the `stud` binary: install from a
//! folder, a .tar.gz and a loopback URL (each then listed and used by a
//! session), integrity at load, consent for grown capabilities, project
//! trust and settings scopes.

use crate::common;

use std::io::Read as _;
use std::path::{Path, PathBuf};

use common::http::{Reply, TestServer};
use common::{StudEnv, call};
use serde_json::{Value, json};

/// A home and project, plus a folder outside both for install sources.
struct Env {
    base: StudEnv,
    work: tempfile::TempDir,
}

impl std::ops::Deref for Env {
    type Target = StudEnv;
    fn deref(&self) -> &StudEnv {
        &self.base
    }
}

impl Env {
    fn new() -> Self {
        let env = Env {
            base: StudEnv::new(),
            work: tempfile::tempdir().unwrap(),
        };
        env.counter_script("script.json", "global answer: {{tool_results}}", true);
        env.scripted_settings(json!({}));
        env
    }

    /// A script that calls `counter` (when asked) and answers with `text`.
    fn counter_script(&self, name: &str, text: &str, with_counter: bool) {
        let mut turns = Vec::new();
        if with_counter {
            turns.push(json!({"text": "", "tool_calls": [call("counter", json!({}))]}));
        }
        turns.push(json!({"text": text}));
        self.file(name, &json!({"turns": turns}).to_string());
    }

    /// One headless turn; the answer text and stderr.
    fn session(&self) -> (String, String) {
        let out = self.run(&["run", "-p", "--output-format", "json", "go"], "");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        (v["result"].as_str().unwrap_or_default().to_string(), stderr)
    }

    fn listed(&self, id: &str) -> Option<Value> {
        let v: Value = serde_json::from_str(&self.ok(&["ext", "list", "--json"])).unwrap();
        v["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .cloned()
    }

    /// A folder holding one fixture (manifest + component).
    fn folder(&self, fixture: &str) -> PathBuf {
        let src = common::fixture_dir(fixture);
        let dir = self.work.path().join(fixture);
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(src.join("extension.toml")).unwrap();
        let component = text
            .lines()
            .find_map(|l| l.strip_prefix("component = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap()
            .to_string();
        std::fs::write(dir.join("extension.toml"), &text).unwrap();
        std::fs::copy(common::wasm(&component), dir.join(&component)).unwrap();
        dir
    }

    /// `<fixture>.tar.gz` with the folder inside.
    fn archive(&self, fixture: &str) -> PathBuf {
        let dir = self.folder(fixture);
        let path = self.work.path().join(format!("{fixture}.tar.gz"));
        let file = std::fs::File::create(&path).unwrap();
        let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        tar.append_dir_all(fixture, &dir).unwrap();
        tar.into_inner().unwrap().finish().unwrap();
        path
    }

    fn stored_component(&self) -> PathBuf {
        let store = self.home.path().join("store");
        let dir = std::fs::read_dir(&store)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        dir.join("fixture_counter.wasm")
    }
}

fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn install_from_a_folder_then_list_and_use_it() {
    let env = Env::new();
    // A cache of its own, to see that the install compiled the component.
    let cache = tempfile::tempdir().unwrap();
    let with_cache = |args: &[&str]| {
        let out = env
            .command(args)
            .env("STUD_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = with_cache(&[
        "ext",
        "install",
        env.folder("counter").to_str().unwrap(),
        "--yes",
    ]);
    assert!(
        out.contains("counter 0.1.0 installed in the global scope"),
        "{out}"
    );
    let check: Value =
        serde_json::from_str(&with_cache(&["ext", "check", "counter", "--json"])).unwrap();
    assert_eq!(check["extensions"].as_array().unwrap().len(), 1, "{check}");
    let counter = check["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "counter")
        .expect("checked");
    assert_eq!(
        counter["code"], "cache",
        "precompiled at install: {counter}"
    );
    let entry = env.listed("counter").expect("listed");
    assert_eq!(entry["scope"], "global");
    assert_eq!(entry["pinned"], true);
    let lock = std::fs::read_to_string(env.home.path().join("extensions.lock")).unwrap();
    assert!(
        lock.contains("[extensions.counter]") && lock.contains("component = \"sha256:"),
        "{lock}"
    );
    let (answer, _) = env.session();
    assert_eq!(answer, "global answer: v1 count=1");
    // Installing the same bytes again changes nothing.
    let again = env.ok(&["ext", "install", env.folder("counter").to_str().unwrap()]);
    assert!(again.contains("unchanged"), "{again}");
}

/// `stud ext pack` writes the same bytes for the same files, whatever
/// their times on disk, prints the archive's sha256, and the archive
/// installs and runs.
#[test]
fn pack_is_reproducible_and_its_archive_installs() {
    let env = Env::new();
    let dir = env.folder("counter");
    std::fs::write(dir.join("README.md"), "# counter\n").unwrap();
    let out_a = env.work.path().join("a.tar.gz");
    let printed = env.ok(&[
        "ext",
        "pack",
        dir.to_str().unwrap(),
        "-o",
        out_a.to_str().unwrap(),
    ]);
    // Touch every file (same content, new times) and pack again.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for f in ["README.md", "extension.toml", "fixture_counter.wasm"] {
        let bytes = std::fs::read(dir.join(f)).unwrap();
        std::fs::write(dir.join(f), bytes).unwrap();
    }
    let out_b = env.work.path().join("b.tar.gz");
    env.ok(&[
        "ext",
        "pack",
        dir.to_str().unwrap(),
        "-o",
        out_b.to_str().unwrap(),
    ]);
    let (a, b) = (
        std::fs::read(&out_a).unwrap(),
        std::fs::read(&out_b).unwrap(),
    );
    assert!(a == b, "two packs of the same files differ");
    assert!(
        printed.contains(&format!("sha256 {}", sha256_hex(&out_a))),
        "{printed}"
    );
    assert!(printed.contains("counter/README.md"), "{printed}");
    env.ok(&["ext", "install", out_a.to_str().unwrap(), "--yes"]);
    assert_eq!(env.session().0, "global answer: v1 count=1");
}

/// A crate folder installs with the component cargo built (its sources
/// and `target/` are not copied); before it is built, the error names the
/// paths looked at and the command that builds it.
#[test]
fn a_crate_folder_installs_its_built_component() {
    let env = Env::new();
    let dir = env.folder("counter");
    std::fs::remove_file(dir.join("fixture_counter.wasm")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"fixture-counter\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    let out = env.run(&["ext", "install", dir.to_str().unwrap(), "--yes"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("target/wasm32-wasip2/release/fixture_counter.wasm")
            && err.contains("cargo build --release --target wasm32-wasip2"),
        "{err}"
    );
    assert!(
        !err.contains(".install-"),
        "no temporary folder in the message: {err}"
    );
    let built = dir.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&built).unwrap();
    std::fs::copy(
        common::wasm("fixture_counter.wasm"),
        built.join("fixture_counter.wasm"),
    )
    .unwrap();
    env.ok(&["ext", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(env.session().0, "global answer: v1 count=1");
    let stored = env.stored_component();
    let folder = stored.parent().unwrap();
    assert!(stored.is_file());
    assert!(!folder.join("Cargo.toml").exists() && !folder.join("target").exists());
}

/// Signed extensions: `ext keygen`, `ext pack --key`; with the key among
/// `trustedPublishers` and `signaturePolicy: "trusted"`, the signed
/// archive installs and records its publisher (`ext info` shows it). The
/// same archive changed after signing is refused naming the publisher and
/// the file; an unsigned one is refused by the policy; under the default
/// policy a key nobody trusts installs, and the consent text says so.
#[test]
fn signed_archives_install_and_tampered_or_unsigned_ones_are_refused() {
    let env = Env::new();
    let keys = env.work.path().join("keys");
    let made = env.ok(&["ext", "keygen", "-o", keys.to_str().unwrap()]);
    let key = made
        .split("\"key\": \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{made}"))
        .to_string();
    let secret = keys.join("stud.key");
    let policy = |policy: &str| {
        env.scripted_settings(json!({
            "trustedPublishers": [{"name": "Ada", "key": key}],
            "signaturePolicy": policy
        }));
    };
    policy("trusted");
    let dir = env.folder("counter");
    let signed = env.work.path().join("counter.tar.gz");
    env.ok(&[
        "ext",
        "pack",
        dir.to_str().unwrap(),
        "-o",
        signed.to_str().unwrap(),
        "--key",
        secret.to_str().unwrap(),
    ]);
    let sig = env.work.path().join("counter.tar.gz.minisig");
    assert!(sig.is_file());
    // Changed after signing (one byte of the component's data).
    let tampered = env.work.path().join("tampered.tar.gz");
    let mut bytes = std::fs::read(&signed).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&tampered, &bytes).unwrap();
    std::fs::copy(&sig, env.work.path().join("tampered.tar.gz.minisig")).unwrap();
    let out = env.run(&["ext", "install", tampered.to_str().unwrap(), "--yes"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("signature of Ada")
            && err.contains("tampered.tar.gz")
            && err.contains("nothing was installed"),
        "{err}"
    );
    // Unsigned, under the "trusted" policy.
    let unsigned = env.work.path().join("unsigned.tar.gz");
    env.ok(&[
        "ext",
        "pack",
        dir.to_str().unwrap(),
        "-o",
        unsigned.to_str().unwrap(),
    ]);
    let out = env.run(&["ext", "install", unsigned.to_str().unwrap(), "--yes"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("unsigned") && err.contains("signaturePolicy"),
        "{err}"
    );
    assert!(env.listed("counter").is_none());
    // The signed one.
    env.ok(&["ext", "install", signed.to_str().unwrap(), "--yes"]);
    let info = env.ok(&["ext", "info", "counter"]);
    assert!(info.contains("publisher: Ada (key "), "{info}");
    assert_eq!(env.session().0, "global answer: v1 count=1");
    // Another key under the default policy: installs, and says whose.
    let other = env.work.path().join("other");
    env.ok(&["ext", "keygen", "-o", other.to_str().unwrap()]);
    env.ok(&["ext", "remove", "counter"]);
    policy("any");
    env.ok(&[
        "ext",
        "sign",
        signed.to_str().unwrap(),
        "--key",
        other.join("stud.key").to_str().unwrap(),
    ]);
    let out = env.run(&["ext", "install", signed.to_str().unwrap()], "y\n");
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("which no trusted publisher has"), "{said}");
    let info = env.ok(&["ext", "info", "counter"]);
    assert!(info.contains("publisher: none"), "{info}");
}

#[test]
fn install_from_an_archive_and_a_loopback_url() {
    let env = Env::new();
    let archive = env.archive("counter");
    env.ok(&["ext", "install", archive.to_str().unwrap(), "--yes"]);
    assert!(env.listed("counter").is_some());
    assert_eq!(env.session().0, "global answer: v1 count=1");

    let env = Env::new();
    let bytes = std::fs::read(&archive).unwrap();
    let digest = sha256_hex(&archive);
    let server = TestServer::start(vec![Reply::new(200, bytes.clone()), Reply::new(200, bytes)]);
    let url = format!("{}/counter.tar.gz", server.url());
    // A wrong expected digest installs nothing.
    let out = env.run(
        &["ext", "install", &url, "--yes", "--sha256", &"0".repeat(64)],
        "",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was installed"));
    assert!(env.listed("counter").is_none());
    env.ok(&["ext", "install", &url, "--yes", "--sha256", &digest]);
    assert_eq!(env.listed("counter").unwrap()["version"], "0.1.0");
    assert_eq!(env.session().0, "global answer: v1 count=1");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_tampered_component_is_refused_with_both_digests_and_the_session_goes_on() {
    let env = Env::new();
    env.ok(&[
        "ext",
        "install",
        env.folder("counter").to_str().unwrap(),
        "--yes",
    ]);
    // Used once: its spec is now noted beside its compiled code, and a
    // later start must still check the component itself.
    let (answer, stderr) = env.session();
    assert!(answer.starts_with("global answer: "), "{answer} {stderr}");
    let stored = env.stored_component();
    let expected = sha256_hex(&stored);
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes.extend_from_slice(b"tampered");
    std::fs::write(&stored, &bytes).unwrap();
    let actual = sha256_hex(&stored);
    let (answer, stderr) = env.session();
    assert!(
        stderr.contains("`counter`")
            && stderr.contains(&format!("sha256:{expected}"))
            && stderr.contains(&format!("sha256:{actual}"))
            && stderr.contains("stud ext install"),
        "{stderr}"
    );
    assert!(answer.contains("unknown tool `counter`"), "{answer}");
    let out = env.run(&["ext", "verify"], "");
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("MISMATCH  counter") && report.contains(&actual),
        "{report}"
    );
}

#[test]
fn an_update_asking_for_a_new_host_needs_consent_again() {
    let env = Env::new();
    env.ok(&[
        "ext",
        "install",
        env.folder("counter").to_str().unwrap(),
        "--yes",
    ]);
    let v2 = env.folder("counter-v2");
    let out = env.run(&["ext", "install", v2.to_str().unwrap()], "n\n");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("connect to example.com") && stderr.contains("declined"),
        "{stderr}"
    );
    assert_eq!(env.listed("counter").unwrap()["version"], "0.1.0");
    assert_eq!(env.session().0, "global answer: v1 count=1");

    let out = env.run(&["ext", "install", v2.to_str().unwrap()], "y\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("updated from 0.1.0"));
    assert_eq!(env.listed("counter").unwrap()["version"], "0.2.0");
    env.ok(&["ext", "remove", "counter"]);
    assert!(env.listed("counter").is_none());
}

#[test]
fn an_untrusted_project_is_not_read_until_trusted() {
    let env = Env::new();
    let stud_dir = env.project.path().join(".stud");
    std::fs::create_dir_all(stud_dir.join("extensions")).unwrap();
    let marker = env.folder("marker");
    let dest = stud_dir.join("extensions").join("marker");
    std::fs::create_dir(&dest).unwrap();
    for f in std::fs::read_dir(&marker).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dest.join(f.file_name())).unwrap();
    }
    env.counter_script("project-script.json", "project answer", false);
    std::fs::write(
        stud_dir.join("settings.json"),
        json!({"providers": {"scripted": {"script-file": "project-script.json"}}}).to_string(),
    )
    .unwrap();

    // Headless and even --yolo: skipped with a notice, nothing ran.
    let out = env.run(&["run", "-p", "--yolo", "go"], "");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not trusted") && stderr.contains("stud trust grant"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("global answer"));
    assert!(
        !env.project.path().join("marker.txt").exists(),
        "untrusted project code ran"
    );
    let shown = env.ok(&["config", "show"]);
    assert!(!shown.contains("project-script.json"), "{shown}");

    env.ok(&["trust", "grant"]);
    assert!(env.ok(&["trust", "list"]).contains("trusted"));
    let (answer, _) = env.session();
    assert_eq!(answer, "project answer");
    assert!(
        env.project.path().join("marker.txt").exists(),
        "trusted project extension did not run"
    );
    let shown = env.ok(&["config", "show"]);
    assert!(
        shown.contains("/providers/scripted/script-file = \"project-script.json\"")
            && shown.contains("(project "),
        "{shown}"
    );
    // Trust lives in the global scope, never in the project.
    assert!(env.home.path().join("trust.json").is_file());
    assert!(!stud_dir.join("trust.json").exists());

    env.ok(&["trust", "revoke"]);
    std::fs::remove_file(env.project.path().join("marker.txt")).unwrap();
    assert!(env.session().0.contains("global answer"));
    assert!(!env.project.path().join("marker.txt").exists());
}

/// Replace a file the way an installer or build does: write aside, rename
/// over (so the watcher never sees half a file).
fn replace(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A headless turn (its script already written) in stream-json: after
/// the n-th `tool.succeeded`, `on_output(n)` runs. Every event, and each
/// tool output in order.
fn run_counting(env: &Env, mut on_output: impl FnMut(usize)) -> (Vec<Value>, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = env
        .command(&["run", "-p", "--output-format", "stream-json", "go"])
        .spawn()
        .unwrap();
    let mut events = Vec::new();
    let mut outputs = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(ev) = serde_json::from_str::<Value>(&line.unwrap()) else {
            continue;
        };
        if ev["event"] == "tool.succeeded" {
            outputs.push(
                ev["payload"]["output"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            on_output(outputs.len());
        }
        events.push(ev);
    }
    assert!(child.wait().unwrap().success(), "{events:#?}");
    (events, outputs)
}

/// The `(id, reason)` of each `extension.reload.refused`; none may be
/// `extension.reloaded`.
fn refusals(events: &[Value]) -> Vec<(String, String)> {
    assert!(events.iter().all(|e| e["event"] != "extension.reloaded"));
    events
        .iter()
        .filter(|e| e["event"] == "extension.reload.refused")
        .map(|e| {
            let text = |k: &str| e["payload"][k].as_str().unwrap_or_default().to_string();
            (text("id"), text("reason"))
        })
        .collect()
}

#[test]
fn a_tool_replaced_during_a_session_answers_anew_and_keeps_its_state() {
    let env = Env::new();
    let dir = common::install_fixture(env.home.path(), "counter");
    let component = dir.join("fixture_counter.wasm");
    let turns = json!({"turns": [
        {"text": "", "tool_calls": [call("counter", json!({}))]},
        {"text": "", "sleep_ms": 2500, "tool_calls": [call("counter", json!({}))]},
        {"text": "", "sleep_ms": 2500, "tool_calls": [call("counter", json!({}))]},
        {"text": "done"}
    ]});
    env.file("script.json", &turns.to_string());
    let (events, outputs) = run_counting(&env, |n| match n {
        // During the next request's wait: a new version, then a broken one.
        1 => replace(
            &component,
            &std::fs::read(common::wasm("fixture_counter_v2.wasm")).unwrap(),
        ),
        2 => replace(&component, b"not a component"),
        _ => {}
    });
    assert_eq!(
        outputs,
        ["v1 count=1", "v2 count=2", "v2 count=3"],
        "{events:#?}"
    );
    let reloaded: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "extension.reloaded")
        .collect();
    assert_eq!(reloaded.len(), 1, "{reloaded:?}");
    assert_eq!(reloaded[0]["payload"]["id"], "counter");
    let boundary = reloaded[0]["payload"]["boundary"].as_str().unwrap();
    assert!(
        [
            "between-turns",
            "receive-input",
            "compose-request",
            "send-request",
            "stream-response",
            "tool-call",
            "render",
        ]
        .contains(&boundary),
        "swapped at a named boundary: {boundary}"
    );
    // Never mid-stage: the last stage event before the swap closed its
    // stage.
    let at = events
        .iter()
        .position(|e| e["event"] == "extension.reloaded")
        .unwrap();
    let last_stage = events[..at]
        .iter()
        .rev()
        .find(|e| e["event"] == "stage.pre" || e["event"] == "stage.post")
        .expect("stage events before the swap");
    assert_eq!(last_stage["event"], "stage.post", "{last_stage}");
    // Each change is compiled once, however many file events announce it.
    let requested = events
        .iter()
        .filter(|e| e["event"] == "extension.reload.requested")
        .count();
    assert_eq!(requested, 2, "{events:#?}");
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "extension.reload.failed")
        .collect();
    assert_eq!(failed.len(), 1, "the broken replacement is reported once");
    let failed = failed[0];
    assert_eq!(failed["payload"]["id"], "counter");
    assert!(
        failed["payload"]["error"]
            .as_str()
            .unwrap()
            .contains("counter"),
        "{failed}"
    );
    // The replaced version was retired after the swap: `deactivate`, then
    // `dispose`, called on its instance; the new one keeps serving.
    let said: Vec<(usize, &str)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == "extension.log" && e["payload"]["extension"] == "counter")
        .map(|(i, e)| (i, e["payload"]["message"].as_str().unwrap_or_default()))
        .collect();
    let lines: Vec<&str> = said.iter().map(|(_, m)| *m).collect();
    assert_eq!(&lines[..2], ["v1 deactivate", "v1 dispose"], "{said:?}");
    assert!(said[0].0 > at, "retired before the swap: {said:?}");
    assert!(!lines.contains(&"v2 dispose") || lines.last() == Some(&"v2 dispose"));
}

/// A hand-placed extension is swapped for a version whose manifest asks
/// for a new host while a headless session runs: nobody can consent, so
/// the old version keeps serving and the refusal says what it asked for.
#[test]
fn a_reload_that_asks_for_more_is_refused_headless() {
    let env = Env::new();
    let dir = common::install_fixture(env.home.path(), "counter");
    let turns = json!({"turns": [
        {"text": "", "tool_calls": [call("counter", json!({}))]},
        {"text": "", "sleep_ms": 2500, "tool_calls": [call("counter", json!({}))]},
        {"text": "done"}
    ]});
    env.file("script.json", &turns.to_string());
    let grown = std::fs::read_to_string(common::fixture_dir("counter-v2").join("extension.toml"))
        .unwrap()
        .replace("fixture_counter_v2.wasm", "fixture_counter.wasm");
    let (events, outputs) = run_counting(&env, |n| {
        if n == 1 {
            replace(&dir.join("extension.toml"), grown.as_bytes());
            replace(
                &dir.join("fixture_counter.wasm"),
                &std::fs::read(common::wasm("fixture_counter_v2.wasm")).unwrap(),
            );
        }
    });
    assert_eq!(outputs, ["v1 count=1", "v1 count=2"], "{events:#?}");
    let refused = refusals(&events);
    assert!(
        refused.iter().any(|(_, reason)| {
            reason.contains("asks for more than it was granted")
                && reason.contains("connect to example.com")
        }),
        "{refused:#?}"
    );
}

/// The attack (issue 34, review two): a trusted project's extension is
/// replaced while a session runs (an allowlisted `git pull` brings new
/// code for `.stud/extensions/counter/`). Its capabilities are the same,
/// so no growth question comes; before, the new code was swapped in at
/// the next stage boundary although nobody reviewed it. A project
/// extension now reloads only when the project's trust review, as it is
/// now, is the one the user accepted and lists these very bytes: here it
/// is refused, saying to run `stud trust grant`, and the old version goes
/// on. Accepted (`stud trust grant` meanwhile), the same change reloads.
#[test]
fn a_project_extension_changed_during_a_session_is_not_swapped_in_unreviewed() {
    let env = Env::new();
    let dir = env.project.path().join(".stud/extensions/counter");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::rename(common::install_fixture(env.home.path(), "counter"), &dir).unwrap();
    env.ok(&["trust", "grant"]);
    let turns = json!({"turns": [
        {"text": "", "tool_calls": [call("counter", json!({}))]},
        {"text": "", "sleep_ms": 2500, "tool_calls": [call("counter", json!({}))]},
        {"text": "done"}
    ]});
    env.file("script.json", &turns.to_string());
    let component = dir.join("fixture_counter.wasm");
    let v2 = std::fs::read(common::wasm("fixture_counter_v2.wasm")).unwrap();
    let (events, outputs) = run_counting(&env, |n| {
        if n == 1 {
            replace(&component, &v2);
        }
    });
    assert_eq!(outputs, ["v1 count=1", "v1 count=2"], "{events:#?}");
    let refused = refusals(&events);
    assert!(
        refused.iter().any(|(id, reason)| {
            id == "counter"
                && reason.contains("trust review")
                && reason.contains("stud trust grant")
        }),
        "{refused:#?}"
    );

    // Reviewed and accepted: the change the user saw is taken up.
    std::fs::copy(common::wasm("fixture_counter.wasm"), &component).unwrap();
    env.ok(&["trust", "grant"]);
    let (events, outputs) = run_counting(&env, |n| {
        if n == 1 {
            replace(&component, &v2);
            env.ok(&["trust", "grant"]);
        }
    });
    assert_eq!(outputs, ["v1 count=1", "v2 count=2"], "{events:#?}");
}

#[test]
fn the_trust_prompt_offers_trust_trust_once_and_decline() {
    let env = Env::new();
    let stud_dir = env.project.path().join(".stud");
    std::fs::create_dir_all(&stud_dir).unwrap();
    env.counter_script("project-script.json", "project answer", false);
    std::fs::write(
        stud_dir.join("settings.json"),
        json!({"providers": {"scripted": {"script-file": "project-script.json"}}}).to_string(),
    )
    .unwrap();
    // One turn on a pseudo-terminal, typing `answer` first.
    let run = |answer: &str| -> String {
        let out = env.on_terminal("run --yolo go", answer);
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let asked = "[t]rust / trust [o]nce / [d]ecline";

    let screen = run("o\n");
    assert!(
        screen.contains(asked) && screen.contains("settings.json"),
        "{screen}"
    );
    assert!(screen.contains("project answer"), "{screen}");
    assert!(!env.ok(&["trust", "list"]).contains("trusted"));

    let screen = run("d\n");
    assert!(screen.contains(asked), "{screen}");
    assert!(screen.contains("global answer"), "{screen}");
    assert!(env.ok(&["trust", "list"]).contains("declined"));

    let screen = run("t\n");
    assert!(
        screen.contains("You declined this project before."),
        "{screen}"
    );
    assert!(screen.contains("project answer"), "{screen}");
    assert!(env.ok(&["trust", "list"]).contains("trusted"));

    // Decided: no question any more.
    let screen = run("");
    assert!(!screen.contains(asked), "{screen}");
    assert!(screen.contains("project answer"), "{screen}");
}

#[test]
fn a_bad_project_config_falls_back_and_cannot_switch_a_guard_off() {
    let env = Env::new();
    let stud_dir = env.project.path().join(".stud");
    std::fs::create_dir_all(&stud_dir).unwrap();
    // Not in protect-paths' schema: loading it with this config fails.
    std::fs::write(
        stud_dir.join("settings.json"),
        json!({"hooks": {"protect-paths": {"patterns": "not a list"}}}).to_string(),
    )
    .unwrap();
    env.file(".env", "SECRET=1\n");
    env.file(
        "script.json",
        &json!({"turns": [
            {"text": "", "tool_calls": [call("read", json!({"path": ".env"}))]},
            {"text": "{{tool_results}}"}
        ]})
        .to_string(),
    );
    env.ok(&["trust", "grant"]);
    let out = env.run(
        &["run", "-p", "--yolo", "--output-format", "json", "go"],
        "",
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("protect-paths") && stderr.contains("extension's defaults"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let answer = v["result"].as_str().unwrap();
    assert!(
        answer.contains("protect-paths"),
        "the guard did not run: {answer}"
    );
    assert!(!answer.contains("SECRET=1"), "{answer}");
}

#[test]
fn install_asks_first_checks_the_contract_and_installs_into_a_project() {
    let env = Env::new();
    // Declined at the prompt: nothing installed, nothing pinned.
    let out = env.run(
        &["ext", "install", env.folder("counter").to_str().unwrap()],
        "n\n",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Install `counter` 0.1.0 (tool, unsigned)"),
        "{stderr}"
    );
    assert!(env.listed("counter").is_none());
    assert!(!env.home.path().join("extensions.lock").exists());

    // Built against a contract this stud does not speak: refused before
    // anything is asked or stored.
    let out = env.run(
        &[
            "ext",
            "install",
            env.folder("future-contract").to_str().unwrap(),
            "--yes",
        ],
        "",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0.9.0") && stderr.contains("0.1"),
        "{stderr}"
    );
    assert!(env.listed("future-contract").is_none());

    // Into the (trusted) project scope: its own lockfile and store.
    std::fs::create_dir_all(env.project.path().join(".stud")).unwrap();
    env.ok(&["trust", "grant"]);
    let folder = env.folder("counter");
    env.ok(&[
        "ext",
        "install",
        folder.to_str().unwrap(),
        "--scope",
        "project",
        "--yes",
    ]);
    let lock =
        std::fs::read_to_string(env.project.path().join(".stud").join("extensions.lock")).unwrap();
    assert!(lock.contains("[extensions.counter]"), "{lock}");
    assert_eq!(env.listed("counter").unwrap()["scope"], "project");
    let info = env.ok(&["ext", "info", "counter"]);
    assert!(
        info.contains("counter 0.1.0 (tool)") && info.contains("pinned in extensions.lock"),
        "{info}"
    );
    assert!(info.contains("it may:"), "{info}");
    assert_eq!(env.session().0, "global answer: v1 count=1");
}

/// Everything under `dir`, relative, sorted (for "nothing was left" checks).
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    common::walk(dir, &mut |p| {
        out.push(p.strip_prefix(dir).unwrap().display().to_string());
    });
    out.sort();
    out
}

/// Consent comes before any work: a "no" leaves no temporary folder, no
/// stored copy and no compiled code behind.
#[test]
fn a_declined_install_leaves_nothing_behind() {
    let env = Env::new();
    let before = tree(env.home.path());
    let cache = tempfile::tempdir().unwrap();
    let archive = env.archive("counter");
    let mut child = env
        .command(&["ext", "install", archive.to_str().unwrap()])
        .env("STUD_CACHE_DIR", cache.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"n\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Install `counter` 0.1.0"), "{stderr}");
    assert!(stderr.contains("declined"), "{stderr}");
    assert_eq!(tree(env.home.path()), before);
    assert!(tree(cache.path()).is_empty(), "{:?}", tree(cache.path()));
}

/// Hostile archives: too many entries, or more bytes than the limit once
/// unpacked (a few hundred KB of gzip). Refused with a clear message
/// before anything is asked or written.
#[test]
fn tar_bombs_are_refused_and_leave_nothing() {
    let env = Env::new();
    let before = tree(env.home.path());
    let manifest = std::fs::read(common::fixture_dir("counter").join("extension.toml")).unwrap();
    let build =
        |name: &str, add: &dyn Fn(&mut tar::Builder<flate2::write::GzEncoder<std::fs::File>>)| {
            let path = env.work.path().join(name);
            let gz = flate2::write::GzEncoder::new(
                std::fs::File::create(&path).unwrap(),
                flate2::Compression::fast(),
            );
            let mut tar = tar::Builder::new(gz);
            let mut header = tar::Header::new_gnu();
            header.set_size(manifest.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, "extension.toml", manifest.as_slice())
                .unwrap();
            add(&mut tar);
            tar.into_inner().unwrap().finish().unwrap();
            path
        };
    let many = build("many.tar.gz", &|tar| {
        for i in 0..10_001 {
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            h.set_cksum();
            tar.append_data(&mut h, format!("f/{i}"), &b"x"[..])
                .unwrap();
        }
    });
    let huge = build("huge.tar.gz", &|tar| {
        let size: u64 = 300 << 20;
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(
            &mut h,
            "fixture_counter.wasm",
            std::io::repeat(0).take(size),
        )
        .unwrap();
    });
    for (archive, says) in [
        (many, "more than 10000 files"),
        (huge, "unpacks to more than"),
    ] {
        let out = env.run(&["ext", "install", archive.to_str().unwrap(), "--yes"], "");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(tree(env.home.path()), before);
    }
}

/// An extension whose dependency is present but fails to load (its
/// component is not a component) is left out too, saying why.
#[test]
fn an_extension_whose_dependency_failed_to_load_is_left_out() {
    let env = Env::new();
    let dep = common::install_fixture(env.home.path(), "counter");
    std::fs::write(dep.join("fixture_counter.wasm"), b"not a component").unwrap();
    let dir = env.install("hostile");
    let manifest = std::fs::read_to_string(dir.join("extension.toml")).unwrap()
        + "\n[dependencies]\ncounter = \"^0.1\"\n";
    std::fs::write(dir.join("extension.toml"), manifest).unwrap();
    env.file(
        "script.json",
        &json!({"turns": [
            {"text": "", "tool_calls": [call("hostile", json!({"mode": "ok"}))]},
            {"text": "{{tool_results}}"}
        ]})
        .to_string(),
    );
    let (answer, stderr) = env.session();
    assert!(
        stderr.contains("`hostile` was left out: it depends on `counter`, which failed to load"),
        "{stderr}"
    );
    assert!(answer.contains("unknown tool `hostile`"), "{answer}");
}
