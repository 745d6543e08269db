//! Installing by name from an extension index served on loopback, with
//! the `stud` binary: signed archives made by `stud ext pack --key`, an
//! index in the documented shape, `search` (live and from the cache),
//! `install NAME@RANGE`, a tampered archive and a wrong signature refused,
//! `outdated` and `update` (asking again when the new version wants a new
//! network host).

use crate::common;

use std::path::{Path, PathBuf};

use common::StudEnv;
use common::http::StaticServer;
use serde_json::{Value, json};

fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

struct Publisher {
    env: StudEnv,
    work: tempfile::TempDir,
    /// What the server serves.
    site: PathBuf,
    server: StaticServer,
    versions: Vec<Value>,
}

impl Publisher {
    fn new() -> Self {
        let work = tempfile::tempdir().unwrap();
        let site = work.path().join("site");
        std::fs::create_dir_all(&site).unwrap();
        let server = StaticServer::start(&site);
        let p = Publisher {
            env: StudEnv::new(),
            work,
            site,
            server,
            versions: Vec::new(),
        };
        let keys = p.work.path().join("keys");
        p.env.ok(&["ext", "keygen", "-o", keys.to_str().unwrap()]);
        let public = std::fs::read_to_string(keys.join("stud.pub")).unwrap();
        let key = public.lines().nth(1).unwrap().trim().to_string();
        p.env.file(
            "script.json",
            &json!({"turns": [
                {"text": "", "tool_calls": [common::call("counter", json!({}))]},
                {"text": "answer: {{tool_results}}"}
            ]})
            .to_string(),
        );
        p.env.settings(json!({
            "active": {"provider": "scripted"},
            "providers": {"scripted": {"script-file": "script.json"}},
            "trustedPublishers": [{"name": "Ada", "key": key}],
            "signaturePolicy": "trusted",
            "extensionIndexes": [p.server.url("index.json")]
        }));
        p
    }

    /// Pack `fixture` as `shout` `version` signed with the key, and list it.
    fn publish(&mut self, fixture: &str, version: &str) -> PathBuf {
        self.publish_as(fixture, "shout", version)
    }

    /// [`publish`](Self::publish) of an archive whose manifest says `id`.
    fn publish_as(&mut self, fixture: &str, id: &str, version: &str) -> PathBuf {
        let dir = self.work.path().join(format!("src-{version}"));
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(common::fixture_dir(fixture).join("extension.toml"))
            .unwrap()
            .replace("id = \"counter\"", &format!("id = \"{id}\""));
        // The top-level version (the first `version =`; `[state]` has its own).
        let text = text.replacen(
            &format!(
                "version = \"{}\"",
                if fixture == "counter" {
                    "0.1.0"
                } else {
                    "0.2.0"
                }
            ),
            &format!("version = \"{version}\""),
            1,
        );
        let component = text
            .lines()
            .find_map(|l| l.strip_prefix("component = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap()
            .to_string();
        std::fs::write(dir.join("extension.toml"), text).unwrap();
        std::fs::copy(common::wasm(&component), dir.join(&component)).unwrap();
        let name = format!("shout-{version}.tar.gz");
        let archive = self.site.join(&name);
        let key = self.work.path().join("keys/stud.key");
        self.env.ok(&[
            "ext",
            "pack",
            dir.to_str().unwrap(),
            "-o",
            archive.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ]);
        self.list(json!({
            "version": version,
            "url": name,
            "sha256": sha256_hex(&archive),
            "signature": format!("{name}.minisig"),
            "publisher": "Ada",
            "contract": "^0.1",
            "capabilities": []
        }));
        archive
    }

    fn list(&mut self, version: Value) {
        self.versions.push(version);
        let index = json!({"extensions": [{
            "id": "shout",
            "name": "Shout",
            "description": "Counts its calls, loudly",
            "kind": "tool",
            "versions": self.versions
        }]});
        std::fs::write(self.site.join("index.json"), index.to_string()).unwrap();
    }

    fn version(&self) -> String {
        let v: Value = serde_json::from_str(&self.env.ok(&["ext", "list", "--json"])).unwrap();
        v["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == "shout")
            .map(|e| e["version"].as_str().unwrap().to_string())
            .unwrap_or_default()
    }

    fn fails(&self, args: &[&str], stdin: &str) -> String {
        let out = self.env.run(args, stdin);
        assert!(!out.status.success(), "{args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

#[test]
fn install_by_name_resolves_verifies_and_updates_from_a_loopback_index() {
    let mut p = Publisher::new();
    let v100 = p.publish("counter", "1.0.0");
    p.publish("counter", "1.1.0");
    p.publish("counter", "2.0.0");
    // Needs a newer host contract: never chosen, named when it matters.
    p.list(json!({"version": "3.0.0", "url": "shout-3.0.0.tar.gz", "sha256": "00", "contract": "^0.2"}));
    // Tampered: the archive served is not the one whose digest is listed.
    let tampered = p.publish("counter", "1.0.1");
    let mut bytes = std::fs::read(&tampered).unwrap();
    bytes.extend_from_slice(b"\0");
    std::fs::write(&tampered, bytes).unwrap();
    // Wrong signature: 1.0.0's signature served for 1.0.2.
    p.publish("counter", "1.0.2");
    std::fs::copy(
        p.site.join("shout-1.0.0.tar.gz.minisig"),
        p.site.join("shout-1.0.2.tar.gz.minisig"),
    )
    .unwrap();
    // Signed by the trusted publisher, listed as shout, but it is `read`:
    // it would replace the bundled read tool.
    p.publish_as("counter", "read", "1.0.3");
    assert!(v100.is_file());

    let found = p.env.ok(&["ext", "search", "LOUD"]);
    assert!(
        found.contains("shout  tool  2.0.0  Ada") && found.contains("Counts its calls"),
        "{found}"
    );

    let out = p.env.ok(&["ext", "install", "shout@^1", "--yes"]);
    assert!(
        out.contains("`shout`@^1: 1.1.0 from") && out.contains("shout 1.1.0 installed"),
        "{out}"
    );
    assert_eq!(p.version(), "1.1.0");
    assert!(
        p.env
            .ok(&["ext", "info", "shout"])
            .contains("publisher: Ada")
    );
    let answer = p.env.ok(&["run", "-p", "go"]);
    assert!(answer.contains("answer: v1 count=1"), "{answer}");

    let err = p.fails(&["ext", "install", "shout@=1.0.1", "--yes"], "");
    assert!(
        err.contains("sha256")
            && err.contains("not the expected")
            && err.contains("nothing was installed"),
        "{err}"
    );
    let err = p.fails(&["ext", "install", "shout@=1.0.2", "--yes"], "");
    assert!(
        err.contains("shout-1.0.2.tar.gz")
            && err.contains("signature of Ada")
            && err.contains("does not match"),
        "{err}"
    );
    let err = p.fails(&["ext", "install", "shout@=1.0.3", "--yes"], "");
    assert!(
        err.contains("listed as `shout` 1.0.3 but holds `read` 1.0.3"),
        "{err}"
    );
    assert!(p.env.ok(&["ext", "info", "read"]).contains("bundled"));
    // A pinned digest the index does not list is not overridden by it.
    let err = p.fails(
        &["ext", "install", "shout@^1", "--sha256", "00ff", "--yes"],
        "",
    );
    assert!(
        err.contains("--sha256 00ff is not what") && err.contains("nothing was installed"),
        "{err}"
    );
    let err = p.fails(&["ext", "install", "shout@^3", "--yes"], "");
    assert!(
        err.contains("3.0.0: built for contract ^0.2; a newer stud is needed"),
        "{err}"
    );
    assert_eq!(p.version(), "1.1.0", "nothing refused changed anything");

    // A new version inside ^1 that wants a network host.
    p.publish("counter-v2", "1.2.0");
    let out = p.env.ok(&["ext", "outdated"]);
    assert!(
        out.contains("shout  1.1.0 -> 1.2.0 (inside ^1")
            && out.contains("latest 2.0.0")
            && out.contains("3.0.0 needs a newer stud"),
        "{out}"
    );
    let err = p.fails(&["ext", "update", "shout"], "n\n");
    assert!(
        err.contains("connect to example.com") && err.contains("declined"),
        "{err}"
    );
    assert_eq!(p.version(), "1.1.0");
    let out = p.env.run(&["ext", "update", "shout"], "y\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("updated from 1.1.0"));
    assert_eq!(p.version(), "1.2.0");
    let out = p.env.ok(&["ext", "outdated"]);
    assert!(out.contains("shout  1.2.0 (newest inside ^1)"), "{out}");

    // Offline: search answers from the cached copy and says so.
    p.server.down();
    let out = p.env.run(&["ext", "search", "shout"], "");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("shout  tool"), "{stdout}");
    assert!(
        stderr.contains("could not be read") && stderr.contains("using its copy"),
        "{stderr}"
    );
}

/// Without indexes, or with a name no index has, the error says what to
/// do; an index URL over plain http to another machine is refused.
#[test]
fn index_errors_name_what_to_fix() {
    let env = StudEnv::new();
    let out = env.run(&["ext", "install", "shout", "--yes"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("extensionIndexes"),
        "{err}"
    );
    env.settings(json!({"extensionIndexes": ["http://example.com/index.json"]}));
    let out = env.run(&["ext", "search", "x"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plain http is only allowed from this machine"),
        "{err}"
    );
}

impl Publisher {
    /// The last listed version without its signature.
    fn unsign_last(&mut self) {
        let last = self.versions.pop().expect("a listed version");
        let mut last = last;
        last.as_object_mut().expect("object").remove("signature");
        self.list(last);
    }

    /// The settings with `signaturePolicy` changed (`None`: removed).
    fn policy(&self, policy: Option<&str>) {
        let path = self.env.home.path().join("settings.json");
        let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        match policy {
            Some(p) => s["signaturePolicy"] = json!(p),
            None => {
                s.as_object_mut().unwrap().remove("signaturePolicy");
            }
        }
        self.env.settings(s);
    }

    /// Re-sign `archive` with the publisher's key, its trusted comment
    /// (the statement the signature makes) set to `statement`.
    fn resign(&self, archive: &Path, statement: &str) {
        let text = std::fs::read_to_string(self.work.path().join("keys/stud.key")).unwrap();
        let sk = minisign::SecretKeyBox::from_string(&text)
            .unwrap()
            .into_secret_key(Some(String::new()))
            .unwrap();
        let bytes = std::fs::read(archive).unwrap();
        let sig = minisign::sign(
            None,
            &sk,
            std::io::Cursor::new(bytes),
            Some(statement),
            Some("crafted"),
        )
        .unwrap();
        let mut name = archive.as_os_str().to_owned();
        name.push(".minisig");
        std::fs::write(PathBuf::from(name), sig.to_string()).unwrap();
    }

    fn lockfile(&self) -> String {
        std::fs::read_to_string(self.env.home.path().join("extensions.lock")).unwrap()
    }
}

/// 1.0.0 is installed signed by the trusted publisher; the index then
/// offers 1.1.0 unsigned (the default policy lets unsigned ones install).
/// `stud ext update` must not take it silently: the lockfile pins the
/// signer, a lost signer is refused without a terminal, `--yes` does not
/// accept it, and only `--allow-signer-change` does.
#[test]
fn an_update_that_loses_the_signer_is_refused_unless_allowed() {
    let mut p = Publisher::new();
    p.policy(None);
    p.publish("counter", "1.0.0");
    p.env.ok(&["ext", "install", "shout@^1", "--yes"]);
    assert!(p.lockfile().contains("Ada"), "{}", p.lockfile());
    p.publish("counter", "1.1.0");
    p.unsign_last();

    for args in [
        &["ext", "update", "shout"][..],
        &["ext", "update", "shout", "--yes"][..],
    ] {
        let err = p.fails(args, "y\n");
        assert!(
            err.contains("signed by Ada")
                && err.contains("unsigned")
                && err.contains("--allow-signer-change"),
            "{args:?}: {err}"
        );
        assert_eq!(p.version(), "1.0.0", "{args:?} updated");
        assert!(p.lockfile().contains("Ada"), "{}", p.lockfile());
    }

    // On a terminal the person is asked; "no" keeps 1.0.0.
    let shown = p.env.on_terminal("ext update shout", "n\n");
    let screen = String::from_utf8_lossy(&shown.stdout);
    assert!(
        screen.contains("signed by Ada") && screen.contains("Accept the new signer"),
        "{screen}"
    );
    assert_eq!(p.version(), "1.0.0");

    let out = p
        .env
        .ok(&["ext", "update", "shout", "--allow-signer-change"]);
    assert!(out.contains("updated from 1.0.0"), "{out}");
    assert_eq!(p.version(), "1.1.0");
    assert!(!p.lockfile().contains("Ada"), "{}", p.lockfile());
}

/// A signature states what it signs (`stud-extension id=.. version=..
/// sha256=..` in minisign's trusted comment). One whose statement names
/// another release than the archive holds does not count, and one without
/// a statement (an old `file:` comment) binds nothing: under
/// `signaturePolicy: "trusted"` both are refused.
#[test]
fn a_signature_that_names_another_release_does_not_count() {
    let mut p = Publisher::new();
    let v100 = p.publish("counter", "1.0.0");
    let v110 = p.publish("counter", "1.1.0");
    let v120 = p.publish("counter", "1.2.0");
    p.resign(
        &v110,
        &format!(
            "stud-extension id=shout version=1.0.0 sha256={}",
            sha256_hex(&v100)
        ),
    );
    p.resign(&v120, "file:shout-1.2.0.tar.gz");
    let err = p.fails(&["ext", "install", "shout@=1.1.0", "--yes"], "");
    assert!(
        err.contains("`shout` 1.0.0") && err.contains("holds `shout` 1.1.0"),
        "{err}"
    );
    let err = p.fails(&["ext", "install", "shout@=1.2.0", "--yes"], "");
    assert!(
        err.contains("does not say which extension it signs") && err.contains("signaturePolicy"),
        "{err}"
    );
    assert_eq!(p.version(), "", "nothing was installed");
    let out = p.env.ok(&["ext", "install", "shout@=1.0.0", "--yes"]);
    assert!(out.contains("shout 1.0.0 installed"), "{out}");
}
