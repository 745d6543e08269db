//! Protected paths as a host file policy, end to end: every way an
//! extension reaches a file (a walk with globs, a walk without a path, a
//! context provider following a link, a config value naming the file, a
//! path tool behind a link) meets the same rule on the resolved path,
//! whatever the guards and the tool's arguments say.

use crate::common;

use common::{StudEnv, call};
use serde_json::{Value, json};

const SECRET: &str = "very-secret-value-4711";

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One headless turn in yolo mode (nothing is asked: the policy alone
/// must hold); the final answer.
fn answer(env: &StudEnv, extra: &[&str]) -> (String, String) {
    let mut args = vec!["run", "-p", "--yolo", "--output-format", "json"];
    args.extend_from_slice(extra);
    args.push("go");
    let out = env.command(&args).output().expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("null")).unwrap_or(Value::Null);
    (
        last["result"].as_str().unwrap_or("").to_string(),
        stderr(&out),
    )
}

fn tool_turn(env: &StudEnv, tool: &str, args: Value) {
    env.script(
        json!([
            {"text": "", "tool_calls": [call(tool, args)]},
            {"text": "{{tool_results}}"}
        ]),
        json!({}),
    );
}

/// `glob: ".env"` became an override whitelist that un-hid and un-ignored
/// the file; the walk now skips protected paths whatever the globs say.
#[test]
fn a_grep_glob_naming_env_does_not_unhide_it() {
    let env = StudEnv::new();
    env.file(".env", &format!("SECRET={SECRET}\n"));
    env.file("app.cfg", "SECRET=placeholder\n");
    tool_turn(&env, "grep", json!({"pattern": "SECRET", "glob": ".env"}));
    let (text, _) = answer(&env, &[]);
    assert!(!text.contains(SECRET), "{text}");
    // A glob for an ordinary file still works.
    tool_turn(&env, "grep", json!({"pattern": "SECRET", "glob": "*.cfg"}));
    let (text, _) = answer(&env, &[]);
    assert!(text.contains("app.cfg:1:SECRET=placeholder"), "{text}");
}

/// A grep over the whole project (no path argument for a guard to see)
/// skipped nothing: a protected key file was returned.
#[test]
fn a_grep_without_a_path_skips_protected_files() {
    let env = StudEnv::new();
    std::fs::create_dir_all(env.project.path().join("deploy")).expect("mkdir");
    env.file("deploy/server.key", &format!("KEY {SECRET}\n"));
    env.file("notes.md", "KEY is in deploy\n");
    tool_turn(&env, "grep", json!({"pattern": "KEY"}));
    let (text, _) = answer(&env, &[]);
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("notes.md:1:KEY is in deploy"), "{text}");
}

/// `ln -s .env AGENTS.md` in a project nobody trusted put the secret into
/// the system prompt: the context provider's open is refused on the
/// resolved path.
#[cfg(unix)]
#[test]
fn agents_md_linked_to_env_stays_out_of_the_prompt() {
    let env = StudEnv::new();
    env.file(".env", &format!("SECRET={SECRET}\n"));
    std::os::unix::fs::symlink(".env", env.project.path().join("AGENTS.md")).expect("link");
    env.script(json!([{"text": "system: {{system}}"}]), json!({}));
    let out = env
        .command(&["run", "-p", "--output-format", "stream-json", "go"])
        .output()
        .expect("run stud");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("system: "), "{stdout}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    // The person is told which file was refused and why.
    let told = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|e| {
            e["event"] == "diagnostic"
                && e["payload"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("`.env`") && m.contains("protectedPaths"))
        });
    assert!(told, "the refusal is not reported: {stdout}");
}

/// A path tool behind a link, with the `protect-paths` guard switched
/// off: the host policy alone keeps the file closed, for reads and writes.
#[cfg(unix)]
#[test]
fn the_policy_holds_without_the_guard() {
    let env = StudEnv::new();
    env.file(".env", &format!("SECRET={SECRET}\n"));
    std::os::unix::fs::symlink(".env", env.project.path().join("notes.txt")).expect("link");
    tool_turn(&env, "read", json!({"path": "notes.txt"}));
    let (text, _) = answer(&env, &["--disable", "protect-paths"]);
    assert!(!text.contains(SECRET), "{text}");
    tool_turn(
        &env,
        "write",
        json!({"path": "notes.txt", "content": "overwritten"}),
    );
    let (_, _) = answer(&env, &["--disable", "protect-paths"]);
    assert_eq!(env.read(".env"), format!("SECRET={SECRET}\n"));
    tool_turn(&env, "write", json!({"path": ".env", "content": ""}));
    let (_, _) = answer(&env, &["--disable", "protect-paths"]);
    assert_eq!(env.read(".env"), format!("SECRET={SECRET}\n"));
}

/// The user grants one exact path; the rest stays protected, and a
/// project cannot grant itself anything.
#[test]
fn only_the_user_lifts_protection_from_an_exact_path() {
    let env = StudEnv::new();
    env.file(".env.example", "EXAMPLE=1\n");
    env.file(".env", &format!("SECRET={SECRET}\n"));
    let turns = json!([
        {"text": "", "tool_calls": [
            call("read", json!({"path": ".env.example"})),
            call("read", json!({"path": ".env"}))
        ]},
        {"text": "{{tool_results}}"}
    ]);
    env.script(
        turns.clone(),
        json!({"protectedPaths": {"allow": [".env.example"]}}),
    );
    let (text, _) = answer(&env, &[]);
    assert!(text.contains("EXAMPLE=1"), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    // The same grant from a trusted project's settings is ignored.
    env.script(turns, json!({}));
    std::fs::create_dir_all(env.project.path().join(".stud")).expect("mkdir");
    env.ok(&["trust", "grant"]);
    std::fs::write(
        env.project.path().join(".stud/settings.json"),
        json!({"protectedPaths": {"allow": [".env.example"], "patterns": ["*.cfg"]}}).to_string(),
    )
    .expect("write settings");
    let (text, err) = answer(&env, &[]);
    assert!(!text.contains("EXAMPLE=1"), "{text}");
    assert!(err.contains("protectedPaths.allow"), "{err}");
}

/// A project's own protected patterns add to the user's.
#[test]
fn a_project_may_protect_more() {
    let env = StudEnv::new();
    env.file("db.cfg", &format!("password={SECRET}\n"));
    std::fs::create_dir_all(env.project.path().join(".stud")).expect("mkdir");
    std::fs::write(
        env.project.path().join(".stud/settings.json"),
        json!({"protectedPaths": {"patterns": ["*.cfg"]}}).to_string(),
    )
    .expect("write settings");
    env.ok(&["trust", "grant"]);
    tool_turn(&env, "read", json!({"path": "db.cfg"}));
    let (text, _) = answer(&env, &[]);
    assert!(!text.contains(SECRET), "{text}");
}

/// A trusted project's `contextProviders.system-prompt-file.path = ".env"`
/// put the secret into the prompt with no new review. Now a project's
/// context-provider settings are a review item (left out until accepted),
/// and once accepted the file is still refused where it is opened.
#[test]
fn a_context_path_from_the_project_is_reviewed_and_still_refused() {
    let env = StudEnv::new();
    env.file(".env", &format!("SECRET={SECRET}\n"));
    env.script(json!([{"text": "system: {{system}}"}]), json!({}));
    std::fs::create_dir_all(env.project.path().join(".stud")).expect("mkdir");
    env.ok(&["trust", "grant"]);
    // A pull brings this.
    std::fs::write(
        env.project.path().join(".stud/settings.json"),
        json!({"contextProviders": {"system-prompt-file": {"path": ".env"}}}).to_string(),
    )
    .expect("write settings");
    let (text, err) = answer(&env, &[]);
    assert!(!text.contains(SECRET), "{text}");
    assert!(
        err.contains("contextProviders") && err.contains("stud trust grant"),
        "{err}"
    );
    let shown = env.ok(&["trust", "grant"]);
    assert!(
        shown.contains("changes what context provider `system-prompt-file` puts into every prompt")
            && shown.contains(".env"),
        "{shown}"
    );
    // Accepted: the provider is configured, and the host still refuses the
    // file it names.
    let (text, _) = answer(&env, &[]);
    assert!(!text.contains(SECRET), "{text}");
}

/// A tool with a read-write grant tries to move, link or remove a
/// protected file, or to move the folder that makes it protected. Every
/// step is refused where it happens; nothing is read, moved or lost.
#[cfg(unix)]
#[test]
fn a_protected_file_cannot_be_moved_linked_or_removed() {
    let env = StudEnv::new();
    env.install("fs-ops");
    let p = env.project.path();
    std::fs::create_dir_all(p.join("secrets/d")).expect("mkdir");
    std::fs::create_dir_all(p.join("deploy/creds")).expect("mkdir");
    std::fs::write(p.join("secrets/prod.json"), SECRET).expect("write");
    std::fs::write(p.join("deploy/creds/db"), SECRET).expect("write");
    env.file(".env", &format!("SECRET={SECRET}\n"));
    // A folder link the repository ships: `s/..` is `secrets`, not `.`.
    std::os::unix::fs::symlink("secrets/d", p.join("s")).expect("link");
    let op = |op: &str, a: &str, b: &str| match op {
        "link" | "rename" => json!({"op": op, "from": a, "to": b}),
        "write" => json!({"op": op, "path": a, "text": b}),
        _ => json!({"op": op, "path": a}),
    };
    let ops = json!([
        op("link", "s/../prod.json", "copy.json"),
        op("read", "copy.json", ""),
        op("rename", "s/../prod.json", "moved.json"),
        op("read", "moved.json", ""),
        op("link", "secrets/prod.json", "c2.json"),
        op("rename", "secrets", "public"),
        op("read", "public/prod.json", ""),
        op("rename", "deploy", "d2"),
        op("read", "d2/creds/db", ""),
        op("rename", ".env", "x.txt"),
        op("remove", ".env", ""),
        op("write", "new.txt", "x"),
        op("rename", "new.txt", ".env"),
    ]);
    env.script(
        json!([
            {"text": "", "tool_calls": [call("fs-ops", json!({"ops": ops}))]},
            {"text": "{{tool_results}}"}
        ]),
        json!({"protectedPaths": {"patterns": ["secrets", "deploy/creds/*"]}}),
    );
    let (text, _) = answer(&env, &[]);
    assert!(!text.contains(SECRET), "{text}");
    for gone in [
        "copy.json",
        "moved.json",
        "c2.json",
        "public",
        "d2",
        "x.txt",
    ] {
        assert!(!p.join(gone).exists(), "{gone} was made: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(p.join("secrets/prod.json")).expect("still there"),
        SECRET
    );
    assert_eq!(env.read(".env"), format!("SECRET={SECRET}\n"));
    // The unprotected step in the middle worked: the tool is not just broken.
    assert!(text.contains("write: ok"), "{text}");
    assert!(p.join("new.txt").exists(), "{text}");
}
