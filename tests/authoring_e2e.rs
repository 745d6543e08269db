//! Writing an extension the way an author does, with the `stud` binary
//! only: `stud ext new` in an empty folder, one line edited, `stud ext
//! build` (a real cargo build for wasm32-wasip2 against the SDK unpacked
//! from the binary), `stud ext install ./NAME`, and a session that uses it.
//!
//! The crates build into one cargo target dir shared by these tests
//! (`target/authoring`), against one SDK kit (`STUD_SDK_DIR`, as homes
//! that share a kit folder do): the first build compiles the SDK and its
//! dependencies (about a minute on 2 cores), the others wait on cargo's
//! lock and then compile only the new crate, seconds each. With a kit in
//! each test's home, each compiled the SDK again (a path dependency's
//! folder is part of its identity): 16 s of `stud-protocol` alone, and a
//! third of the end-to-end tests' CPU went to these builds (issue 42).
//! Each test names its crates apart from the others': cargo puts a crate's
//! component at one path of the shared target dir, so two tests building
//! a `shout` read each other's. Not the bundled
//! extensions' `target/wasm`: those builds add path remaps to the
//! `rustflags`, and alternating flags in one target dir would rebuild every
//! dependency each time.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{StudEnv, call};
use serde_json::{Value, json};

/// The target dir the authors' crates share.
fn shared_target() -> PathBuf {
    common::workspace_root().join("target").join("authoring")
}

/// The SDK kit folder the authors share.
fn shared_kits() -> PathBuf {
    shared_target().join("kits")
}

struct Author {
    env: StudEnv,
    /// The empty folder the author starts in.
    work: tempfile::TempDir,
    /// `STUD_SDK_DIR`.
    kits: PathBuf,
}

impl Author {
    fn new() -> Self {
        Author::with_kits(shared_kits())
    }

    fn with_kits(kits: PathBuf) -> Self {
        Author {
            env: StudEnv::new(),
            work: tempfile::tempdir().unwrap(),
            kits,
        }
    }

    /// `stud ARGS` in `cwd`, cargo pointed at the shared target dir.
    fn stud_in(&self, cwd: &Path, args: &[&str]) -> Output {
        self.env
            .command(args)
            .current_dir(cwd)
            .env("CARGO_TARGET_DIR", shared_target())
            .env("STUD_SDK_DIR", &self.kits)
            .output()
            .unwrap()
    }

    fn ok_in(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.stud_in(cwd, args);
        assert!(
            out.status.success(),
            "stud {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `ext new`, replace `old` by `new` in src/lib.rs (exactly one line),
    /// `ext build`, `ext install ./NAME`.
    fn make(&self, kind: &str, name: &str, old: &str, new: &str) -> String {
        let work = self.work.path();
        let made = self.ok_in(work, &["ext", "new", "--kind", kind, name]);
        assert!(made.contains("src/lib.rs"), "{made}");
        let crate_dir = work.join(name);
        // Against the shared kit, not one in this home.
        let kit = shared_kits()
            .join(stud_protocol::CONTRACT_VERSION)
            .join("sdk");
        let cargo_toml = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
        assert!(
            made.contains(&kit.display().to_string())
                && cargo_toml.contains(&format!("path = \"{}\"", kit.display())),
            "{made}\n{cargo_toml}"
        );
        assert!(!self.env.home.path().join("sdk").exists());
        let lib = crate_dir.join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).unwrap();
        assert_eq!(text.matches(old).count(), 1, "{old} in\n{text}");
        let edited = text.replace(old, new);
        let changed = text
            .lines()
            .zip(edited.lines())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(changed, 1, "one line edited");
        std::fs::write(&lib, edited).unwrap();
        let built = self.ok_in(&crate_dir, &["ext", "build"]);
        assert!(
            built.contains(&format!("built `{name}` 0.1.0 ({kind})")) && built.contains("sha256 "),
            "{built}"
        );
        let path = format!("./{name}");
        self.ok_in(work, &["ext", "install", &path, "--yes"]);
        built
    }

    /// One headless turn with these scripted turns; the answer.
    fn session(&self, turns: Value, prompt: &str) -> String {
        self.env.script(turns, json!({}));
        let out = self
            .env
            .run(&["run", "-p", "--output-format", "json", prompt], "");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        v["result"].as_str().unwrap_or_default().to_string()
    }
}

#[test]
fn a_new_tool_is_edited_built_installed_and_called_by_the_model() {
    let a = Author::new();
    let built = a.make(
        "tool",
        "shout",
        "Ok(ToolOutput::text(text.to_uppercase()))",
        "Ok(ToolOutput::text(format!(\"{}!!\", text.to_uppercase())))",
    );
    assert!(built.contains("nothing beyond its own memory"), "{built}");
    // Only what pack takes is installed: no sources, no target/.
    let listed = a.env.ok(&["ext", "info", "shout"]);
    assert!(listed.contains("shout"), "{listed}");
    let answer = a.session(
        json!([
            {"text": "", "tool_calls": [call("shout", json!({"text": "hi there"}))]},
            {"text": "{{tool_results}}"}
        ]),
        "go",
    );
    assert!(answer.contains("HI THERE!!"), "{answer}");
}

#[test]
fn a_new_guard_hook_is_edited_built_installed_and_denies_a_call() {
    let a = Author::new();
    a.make(
        "hook",
        "guard",
        "const DEFAULT_WORDS: &[&str] = &[\"password\"];",
        "const DEFAULT_WORDS: &[&str] = &[\"secret\"];",
    );
    a.env.file("secret-notes.txt", "the plan\n");
    a.env.file("notes.txt", "open\n");
    let answer = a.session(
        json!([
            {"text": "", "tool_calls": [
                call("read", json!({"path": "secret-notes.txt"})),
                call("read", json!({"path": "notes.txt"}))
            ]},
            {"text": "{{tool_results}}"}
        ]),
        "go",
    );
    assert!(
        answer.contains("mention `secret`") && !answer.contains("the plan"),
        "{answer}"
    );
    assert!(answer.contains("open"), "{answer}");
}

#[test]
fn a_new_command_is_edited_built_installed_and_runs_without_the_model() {
    let a = Author::new();
    a.make(
        "command",
        "count",
        "{words} words, {chars} characters",
        "{words} words and {chars} characters",
    );
    a.env
        .script(json!([{"text": "the model was asked"}]), json!({}));
    let out = a.env.ok(&["-p", "/count one two three"]);
    assert!(out.contains("3 words and 13 characters"), "{out}");
    assert!(!out.contains("the model was asked"), "{out}");
    let help = a.env.ok(&["-p", "/help"]);
    assert!(help.contains("/count"), "{help}");
}

/// Before anything is built, install names the paths it looked at and
/// the command that builds; a build error is cargo's, with the crate
/// named; a bad name is refused before anything is written.
#[test]
fn unbuilt_broken_and_badly_named_crates_get_clear_errors() {
    let a = Author::new();
    let work = a.work.path();
    a.ok_in(work, &["ext", "new", "--kind", "tool", "half"]);
    let out = a.stud_in(work, &["ext", "install", "./half", "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("half.wasm") && err.contains("stud ext build"),
        "{err}"
    );
    let lib = work.join("half/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, text.replace("fn spec(", "fn spec(oops")).unwrap();
    let out = a.stud_in(&work.join("half"), &["ext", "build"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cargo could not build") && err.contains("half"),
        "{err}"
    );
    let out = a.stud_in(work, &["ext", "new", "Bad_Name"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("`Bad_Name`"), "{err}");
    assert!(!work.join("Bad_Name").exists());
    let out = a.stud_in(work, &["ext", "new", "--kind", "gadget", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("gadget"), "{err}");
}

/// `ext build` puts back a kit that was removed (crates depend on it by
/// path; it is derived from the binary), before it looks at the folder;
/// a kit someone changed (a planted `build.rs`, which cargo would run) is
/// replaced, and a kits folder others may write is refused.
#[test]
fn a_removed_or_changed_kit_is_put_back_by_ext_build() {
    let kits = tempfile::tempdir().unwrap();
    let a = Author::with_kits(kits.path().to_path_buf());
    let work = a.work.path();
    a.ok_in(work, &["ext", "new", "--kind", "tool", "kept"]);
    let kit = kits.path().join(stud_protocol::CONTRACT_VERSION);
    assert!(kit.join("sdk/Cargo.toml").is_file());
    std::fs::remove_dir_all(&kit).unwrap();
    // Not a crate: the build stops there, with the kit back in place.
    let out = a.stud_in(work, &["ext", "build"]);
    assert!(!out.status.success());
    assert!(kit.join("sdk/Cargo.toml").is_file());
    assert!(kit.join("sdk/protocol/Cargo.toml").is_file());
    let planted = kit.join("sdk/build.rs");
    std::fs::write(
        &planted,
        "fn main() { std::fs::write(\"/tmp/owned\", \"\").unwrap(); }",
    )
    .unwrap();
    let out = a.stud_in(work, &["ext", "build"]);
    assert!(!out.status.success());
    assert!(!planted.exists());
    assert!(kit.join("sdk/Cargo.toml").is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(kits.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = a.stud_in(work, &["ext", "new", "--kind", "tool", "open"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && err.contains(&kits.path().display().to_string())
                && err.contains("STUD_SDK_DIR"),
            "{err}"
        );
        assert!(!work.join("open").exists());
    }
}

/// Debian, Ubuntu and Fedora give each account its own group and a umask
/// of 002, so files and folders are made group-writable: the kit must
/// still be unpacked into the home's default place (it was refused as a
/// folder others may write), and kept, not rewritten at every use.
#[cfg(unix)]
#[test]
fn a_kit_unpacked_under_umask_002_is_used_and_kept() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    use std::os::unix::process::CommandExt as _;
    let env = StudEnv::new();
    let work = tempfile::tempdir().unwrap();
    let new = |name: &str| {
        let mut c = env.command(&["ext", "new", "--kind", "tool", name]);
        c.current_dir(work.path()).env_remove("STUD_SDK_DIR");
        // SAFETY: umask is async-signal-safe and touches only the child.
        unsafe {
            c.pre_exec(|| {
                libc::umask(0o002);
                Ok(())
            })
        };
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "stud ext new {name} under umask 002:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    new("first");
    let kits = env.home.path().join("sdk");
    let kit = kits.join(stud_protocol::CONTRACT_VERSION);
    let file = kit.join("sdk/Cargo.toml");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kits), 0o755);
    assert_eq!(mode(&file), 0o644);
    let inode = std::fs::metadata(&file).unwrap().ino();
    new("second");
    assert_eq!(
        std::fs::metadata(&file).unwrap().ino(),
        inode,
        "the kit was unpacked again"
    );
    assert!(work.path().join("second/Cargo.toml").is_file());
}

/// The other six kinds: each template builds and passes the checks a load
/// makes (contract stamp, imports against capabilities, exports).
#[test]
fn every_other_kind_s_template_builds_and_passes_the_load_checks() {
    let a = Author::new();
    let work = a.work.path();
    for kind in [
        "provider",
        "ui",
        "logger",
        "context-provider",
        "state-machine",
        "session-store",
    ] {
        let name = format!("my-{kind}");
        a.ok_in(work, &["ext", "new", "--kind", kind, &name]);
        let built = a.ok_in(&work.join(&name), &["ext", "build"]);
        assert!(
            built.contains(&format!("built `{name}` 0.1.0 ({kind})")) && built.contains(": ok ("),
            "{built}"
        );
    }
}

/// Everything `stud` printed so far, read on a thread.
struct Screen(std::sync::Arc<std::sync::Mutex<String>>);

impl Screen {
    fn of(out: std::process::ChildStdout) -> Self {
        use std::io::Read as _;
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = text.clone();
        std::thread::spawn(move || {
            let mut out = out;
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Screen(text)
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    /// Wait (at most 60 s) until `needle` has been printed `times` times.
    fn wait_for(&self, needle: &str, times: usize) -> bool {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < until {
            if self.text().matches(needle).count() >= times {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }
}

/// `stud ext dev` links the crate (built first): `ext list` marks it
/// `dev` and unpinned, a running session uses it, and after the author
/// edits and runs `stud ext build` again the same session swaps the new
/// component in between turns. `--remove` unlinks it.
#[test]
fn a_dev_extension_is_marked_dev_and_reloaded_after_each_build() {
    use std::io::Write as _;
    let a = Author::new();
    let work = a.work.path();
    a.ok_in(work, &["ext", "new", "--kind", "tool", "holler"]);
    let linked = a.ok_in(work, &["ext", "dev", "./holler"]);
    assert!(linked.contains("linked `holler` 0.1.0 (tool)"), "{linked}");
    let table = a.env.ok(&["ext", "list"]);
    let row = table.lines().find(|l| l.starts_with("holler ")).unwrap();
    assert!(row.contains(" dev "), "{row}");
    let v: Value = serde_json::from_str(&a.env.ok(&["ext", "list", "--json"])).unwrap();
    let entry = v["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "holler")
        .unwrap()
        .clone();
    assert_eq!(
        (entry["dev"].clone(), entry["pinned"].clone()),
        (json!(true), json!(false))
    );

    a.env.settings(json!({
        "active": {"provider": "scripted"},
        "providers": {"scripted": {"script": {"repeat": true, "turns": [
            {"text": "", "tool_calls": [call("holler", json!({"text": "hi"}))]},
            {"text": "said {{tool_results}}"}
        ]}}}
    }));
    let mut child = a
        .env
        .command(&[])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let screen = Screen::of(child.stdout.take().unwrap());
    stdin.write_all(b"one\n").unwrap();
    assert!(screen.wait_for("said HI", 1), "{}", screen.text());

    let lib = work.join("holler/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(
        &lib,
        text.replace(
            "Ok(ToolOutput::text(text.to_uppercase()))",
            "Ok(ToolOutput::text(format!(\"{}?\", text.to_uppercase())))",
        ),
    )
    .unwrap();
    a.ok_in(&work.join("holler"), &["ext", "build"]);
    // Tools swap between turns, once compiled: ask until it answers anew.
    let mut asked = 1;
    while !screen.text().contains("said HI?") && asked < 30 {
        stdin.write_all(b"again\n").unwrap();
        asked += 1;
        assert!(screen.wait_for("said HI", asked), "{}", screen.text());
    }
    let shown = screen.text();
    assert!(shown.contains("said HI?"), "{shown}");
    assert!(shown.contains("[reload] holler 0.1.0 is in use"), "{shown}");
    drop(stdin);
    assert!(child.wait().unwrap().success());

    let out = a.ok_in(work, &["ext", "dev", "--remove", "holler"]);
    assert!(out.contains("unlinked"), "{out}");
    assert!(!a.env.ok(&["ext", "list"]).contains("holler "));
    assert!(
        work.join("holler/src/lib.rs").is_file(),
        "the folder is left alone"
    );
}
