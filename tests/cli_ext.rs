//! `stud` binary end to end: --version, ext list, ext check and the
//! compile cache across two starts.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn stud(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stud"))
        .args(args)
        .env("STUD_HOME", home)
        .env_remove("RUST_BACKTRACE")
        .current_dir(cwd)
        .output()
        .expect("run stud")
}

/// `stud` on the compile cache the other end-to-end tests share, for tests
/// that are not about the cache (compiling 44 components again per test
/// costs seconds each).
fn stud_shared(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    common::share_cache_key(home);
    Command::new(env!("CARGO_BIN_EXE_stud"))
        .args(args)
        .env("STUD_HOME", home)
        .env("STUD_CACHE_DIR", common::shared_cache())
        .env_remove("RUST_BACKTRACE")
        .current_dir(cwd)
        .output()
        .expect("run stud")
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success() || !out.stdout.is_empty(),
        "stud failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

const BUNDLED: [&str; 45] = [
    "anthropic",
    "ask-user",
    "bash",
    "clear",
    "command-hooks",
    "compact",
    "console",
    "cost",
    "edit",
    "exit",
    "filesystem",
    "gemini",
    "glob",
    "grep",
    "health",
    "help",
    "jsonl",
    "list",
    "mcp",
    "mode",
    "model",
    "multi-edit",
    "network-policy",
    "openai-compatible",
    "openai-responses",
    "plan-build-review",
    "postgres",
    "project-instructions",
    "protect-paths",
    "provider",
    "read",
    "redact-secrets",
    "reload",
    "resume",
    "save-and-close",
    "scripted",
    "sessions",
    "sm",
    "stage-counter",
    "system-prompt-file",
    "tools",
    "trust",
    "tui",
    "web-fetch",
    "write",
];

#[test]
fn version_and_help() {
    let tmp = tempfile::tempdir().unwrap();
    let out = stud(tmp.path(), tmp.path(), &["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("stud {}", env!("CARGO_PKG_VERSION"))
    );
    let out = stud(tmp.path(), tmp.path(), &["--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ext"));
    let out = stud(tmp.path(), tmp.path(), &["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_settings_parse_error_names_the_file_and_says_its_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("settings.json"), "{\"providers\": {\n").unwrap();
    let out = stud(tmp.path(), tmp.path(), &["run", "-p", "hi"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("settings.json"), "{err}");
    assert!(err.contains("settings.example.json"), "{err}");
    assert_eq!(err.matches("EOF while parsing").count(), 1, "{err}");
}

#[test]
fn ext_list_shows_bundled_and_global_with_digests() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    common::install_fixture(home.path(), "hostile");
    // A broken global manifest is reported, the rest still listed.
    let bad = home.path().join("extensions").join("broken");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("extension.toml"), "id = \"broken\"\nname = \"Broken\"\nversion = \"1\"\nkind = \"tool\"\ncontract = \"^0.1\"\n").unwrap();

    let out = stud(home.path(), cwd.path(), &["ext", "list"]);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    for id in BUNDLED {
        assert!(
            table.lines().any(|l| l.starts_with(id)),
            "{id} missing in:\n{table}"
        );
    }
    let hostile = table
        .lines()
        .find(|l| l.starts_with("hostile"))
        .expect("hostile listed");
    assert!(
        hostile.contains("global") && hostile.contains("tool"),
        "{hostile}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken") && stderr.contains("`version`"),
        "{stderr}"
    );

    let v = json_of(&stud(home.path(), cwd.path(), &["ext", "list", "--json"]));
    let exts = v["extensions"].as_array().unwrap();
    assert_eq!(exts.len(), BUNDLED.len() + 1);
    let read = exts.iter().find(|e| e["id"] == "read").unwrap();
    assert_eq!(read["scope"], "bundled");
    assert_eq!(read["contract"], "0.1.4");
    assert_eq!(read["capabilities"]["filesystem"][0]["dir"], "project");
    assert_eq!(read["sha256"].as_str().unwrap().len(), 64);
    let scripted = exts.iter().find(|e| e["id"] == "scripted").unwrap();
    assert_eq!(scripted["kind"], "provider");
    assert_eq!(v["problems"].as_array().unwrap().len(), 1);
}

/// Bundled extensions run the native code built into the binary (issue
/// 42: a first start compiles none of them); any other extension is
/// compiled once and read from the compile cache after.
#[test]
fn ext_check_uses_native_code_for_bundled_and_the_compile_cache_for_the_rest() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    common::install_fixture(home.path(), "greeter");
    let n = BUNDLED.len() as u64;
    let code_of = |v: &Value, id: &str| {
        v["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} not checked: {v}"))["code"]
            .clone()
    };

    let first = json_of(&stud(home.path(), cwd.path(), &["ext", "check", "--json"]));
    assert_eq!(first["native"], n, "{first}");
    assert_eq!(first["native_refused"], 0);
    assert_eq!(first["compiled"], 1, "only the global extension: {first}");
    assert_eq!(first["cache_hits"], 0);
    for e in first["extensions"].as_array().unwrap() {
        assert_eq!(e["status"], "ok", "{e}");
    }
    assert_eq!(code_of(&first, "greeter"), "compiled");
    for id in BUNDLED {
        assert_eq!(code_of(&first, id), "native", "{id}");
    }
    // Nothing bundled went to the disk cache: one entry, the global one.
    let cache = home.path().join("cache").join("compiled");
    let entries = || {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .collect::<Vec<_>>()
    };
    assert_eq!(entries().len(), 1);

    let second = json_of(&stud(home.path(), cwd.path(), &["ext", "check", "--json"]));
    assert_eq!(second["compiled"], 0, "second start recompiled: {second}");
    assert_eq!(second["cache_hits"], 1);
    assert_eq!(code_of(&second, "greeter"), "cache");

    // A corrupt entry is discarded and recompiled, not trusted.
    let entry = entries().pop().unwrap();
    let mut bytes = std::fs::read(&entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&entry, bytes).unwrap();
    let third = json_of(&stud(home.path(), cwd.path(), &["ext", "check", "--json"]));
    assert_eq!(third["cache_discarded"], 1, "{third}");
    assert_eq!(third["compiled"], 1);
    assert_eq!(third["cache_hits"], 0);
    assert!(
        third["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["status"] == "ok")
    );
}

#[test]
fn ext_check_reports_a_bad_extension_and_keeps_the_rest() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    common::install_fixture(home.path(), "future-contract");
    let out = stud_shared(home.path(), cwd.path(), &["ext", "check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    let exts = v["extensions"].as_array().unwrap();
    let bad = exts.iter().find(|e| e["id"] == "future-contract").unwrap();
    assert_eq!(bad["status"], "failed");
    let msg = bad["error"].as_str().unwrap();
    assert!(
        msg.contains("0.9.0") && msg.contains("0.1.0 to 0.1.4"),
        "{msg}"
    );
    assert_eq!(
        exts.iter().filter(|e| e["status"] == "ok").count(),
        BUNDLED.len()
    );
}

#[test]
fn ext_check_of_named_extensions_checks_only_those_and_refuses_a_typo() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let v = json_of(&stud_shared(
        home.path(),
        cwd.path(),
        &["ext", "check", "read", "help", "--json"],
    ));
    let mut ids: Vec<&str> = v["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["help", "read"], "{v}");
    let out = stud_shared(home.path(), cwd.path(), &["ext", "check", "raed"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`raed`") && err.contains("stud ext list"),
        "{err}"
    );
}

#[test]
fn a_tool_that_imports_processes_without_the_exec_grant_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // The bundled bash component under a manifest that does not ask for
    // `exec`: the process import must not be linked for it.
    let dir = home.path().join("extensions").join("sneaky");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        common::bundled_wasm("stud_bash.wasm"),
        dir.join("sneaky.wasm"),
    )
    .unwrap();
    std::fs::write(
        dir.join("extension.toml"),
        "id = \"sneaky\"\nname = \"Sneaky\"\nversion = \"0.1.0\"\nkind = \"tool\"\ncontract = \"^0.1\"\ncomponent = \"sneaky.wasm\"\n\n[capabilities]\nfilesystem = [{ dir = \"project\", access = \"read-write\" }]\n",
    )
    .unwrap();
    let out = stud_shared(home.path(), cwd.path(), &["ext", "check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    let exts = v["extensions"].as_array().unwrap();
    let bad = exts.iter().find(|e| e["id"] == "sneaky").unwrap();
    assert_eq!(bad["status"], "failed", "{bad}");
    let msg = bad["error"].as_str().unwrap();
    assert!(msg.contains("exec = true"), "{msg}");
    let bash = exts.iter().find(|e| e["id"] == "bash").unwrap();
    assert_eq!(bash["status"], "ok");
}

/// Compiled code runs as native code: an entry planted in the cache (the
/// code of another component under `greeter`'s name, with a checksum that
/// matches it) must not be loaded. (Bundled extensions never read the
/// cache: their code is built into the binary.)
#[test]
fn a_planted_cache_entry_is_not_loaded() {
    use sha2::Digest as _;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    common::install_fixture(home.path(), "greeter");
    common::install_fixture(home.path(), "tally");
    let check = |ids: &[&str]| {
        let mut args = vec!["ext", "check", "--json"];
        args.extend_from_slice(ids);
        json_of(&stud(home.path(), cwd.path(), &args))
    };
    let first = check(&["greeter", "tally"]);
    assert_eq!(first["compiled"], 2, "{first}");
    let listed = json_of(&stud(home.path(), cwd.path(), &["ext", "list", "--json"]));
    let digest = |id: &str| {
        listed["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap()["sha256"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let cache = home.path().join("cache").join("compiled");
    let entry = |hex: &str| {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name().unwrap().to_string_lossy().starts_with(hex)
                    && p.extension().is_some_and(|x| x == "cwasm")
            })
            .unwrap()
    };
    let victim = entry(&digest("greeter"));
    let planted = std::fs::read(entry(&digest("tally"))).unwrap();
    let sum = hex::encode(sha2::Sha256::digest(&planted));
    std::fs::write(&victim, &planted).unwrap();
    for ext in ["sha256", "mac"] {
        std::fs::write(victim.with_extension(ext), &sum).unwrap();
    }
    let second = check(&["greeter"]);
    assert_eq!(second["cache_discarded"], 1, "{second}");
    let greeter = &second["extensions"][0];
    assert_eq!(greeter["status"], "ok", "{second}");
    assert_eq!(greeter["code"], "compiled", "{second}");
    // It describes itself, not the planted command.
    let summary = greeter["summary"].as_str().unwrap_or_default();
    let tally_summary = first["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "tally")
        .unwrap()["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(summary, tally_summary, "the planted code ran: {second}");
    assert_eq!(
        summary,
        first["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == "greeter")
            .unwrap()["summary"]
    );
    let key = home.path().join("cache.key");
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
