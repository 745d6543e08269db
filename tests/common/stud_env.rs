//! A fresh `~/.stud` and project folder, and the `stud` binary run in them
//! the way a user would: the end-to-end tests build on this.

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};

use serde_json::{Value, json};

pub struct StudEnv {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
}

impl Default for StudEnv {
    fn default() -> Self {
        StudEnv::new()
    }
}

impl StudEnv {
    pub fn new() -> Self {
        let env = StudEnv {
            home: tempfile::tempdir().expect("tempdir"),
            project: tempfile::tempdir().expect("tempdir"),
        };
        super::share_cache_key(env.home.path());
        env
    }

    /// `stud ARGS` in the project with this home and the shared compile
    /// cache; no backtraces or provider keys inherited from the caller.
    /// Stdin is empty and output captured unless the caller says otherwise.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_stud"));
        c.args(args)
            .env("STUD_HOME", self.home.path())
            .env("STUD_CACHE_DIR", super::shared_cache())
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LOG")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .current_dir(self.project.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Run to the end with `stdin` as its input.
    pub fn run(&self, args: &[&str], stdin: &str) -> Output {
        self.run_with(args, stdin, &[])
    }

    /// As [`StudEnv::run`], with these variables set for the program.
    pub fn run_with(&self, args: &[&str], stdin: &str, vars: &[(&str, &str)]) -> Output {
        let mut child = self
            .command(args)
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .spawn()
            .expect("start stud");
        // A run that exits without reading its input is fine.
        let _ = child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(stdin.as_bytes());
        child.wait_with_output().expect("wait for stud")
    }

    /// `stud ARGS` on a pseudo-terminal (`script`, as a person's shell
    /// would give it), typing `input`; the screen is its stdout. The line
    /// console is asked for (`STUD_UI=line`): these tests read its lines;
    /// the full-screen UI is tested through a terminal emulator
    /// (`tui_e2e`).
    pub fn on_terminal(&self, args: &str, input: &str) -> Output {
        let mut child = self.terminal(args);
        // A run that exits without reading its input is fine.
        let _ = child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input.as_bytes());
        child.wait_with_output().expect("wait for script")
    }

    /// `stud ARGS` under `script(1)` with the line console, its stdio piped.
    fn terminal(&self, args: &str) -> std::process::Child {
        let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_stud"));
        Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env("STUD_HOME", self.home.path())
            .env("STUD_CACHE_DIR", super::shared_cache())
            .env("STUD_UI", "line")
            .env_remove("RUST_BACKTRACE")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .current_dir(self.project.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script(1) from util-linux")
    }

    /// Like [`Self::on_terminal`], typing step by step: each `(line,
    /// until)` types `line` and, when `until` is not empty, types it again
    /// (once a second, at most 30 times) until the screen shows `until`:
    /// for what comes up in the background (an MCP server starting).
    pub fn on_terminal_steps(&self, args: &str, steps: &[(&str, &str)]) -> Output {
        use std::io::Read;
        use std::sync::{Arc, Mutex};
        let mut child = self.terminal(args);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().expect("piped stdout");
        let reader = {
            let screen = screen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        let mut stdin = child.stdin.take().expect("piped stdin");
        let shown = |text: &str| String::from_utf8_lossy(&screen.lock().unwrap()).contains(text);
        for (line, until) in steps {
            let _ = stdin.write_all(line.as_bytes());
            let _ = stdin.flush();
            if until.is_empty() {
                continue;
            }
            for _ in 0..30 {
                std::thread::sleep(std::time::Duration::from_secs(1));
                if shown(until) {
                    break;
                }
                let _ = stdin.write_all(line.as_bytes());
                let _ = stdin.flush();
            }
        }
        drop(stdin);
        let mut out = child.wait_with_output().expect("wait for script");
        let _ = reader.join();
        out.stdout = std::mem::take(&mut *screen.lock().unwrap());
        out
    }

    /// Start `stud ARGS` (stream-json output expected) and read its stdout
    /// until a line with the event `event`: the child, the lines read
    /// (that one included) and the rest of the output.
    pub fn start_until(
        &self,
        args: &[&str],
        event: &str,
    ) -> (Child, Vec<String>, Lines<BufReader<ChildStdout>>) {
        let mut child = self.command(args).spawn().expect("start stud");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let needle = format!("\"{event}\"");
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.expect("read stdout");
            let found = line.contains(&needle);
            seen.push(line);
            if found {
                break;
            }
        }
        (child, seen, lines)
    }

    /// Start `stud ARGS` (stream-json output), wait for the event `event`
    /// and `settle` more, then send SIGINT as a person's Ctrl-C would: how
    /// it exited and every event line it printed, parsed.
    pub fn interrupt_after(
        &self,
        args: &[&str],
        event: &str,
        settle: std::time::Duration,
    ) -> (std::process::ExitStatus, Vec<Value>) {
        let (mut child, mut seen, lines) = self.start_until(args, event);
        std::thread::sleep(settle);
        signal(&child, "INT");
        seen.extend(lines.map_while(Result::ok));
        let status = child.wait().expect("wait for stud");
        let events = seen
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (status, events)
    }

    /// A headless run in allowlist mode with these `--allow` entries and
    /// JSON output (prompt "go"); it may halt (exit 3).
    pub fn run_allowlist(&self, allow: &[&str]) -> Output {
        let mut args = vec![
            "run",
            "-p",
            "--mode",
            "allowlist",
            "--output-format",
            "json",
        ];
        for a in allow {
            args.extend(["--allow", a]);
        }
        args.push("go");
        self.command(&args).output().expect("run stud")
    }

    /// Run with no input; it must succeed. Its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[])
    }

    /// [`ok`](Self::ok) with extra environment variables.
    pub fn ok_with(&self, args: &[&str], vars: &[(&str, &str)]) -> String {
        let out = self.ok_output(args, vars);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run with no input; it must succeed. Its stderr (where `--debug`
    /// writes the trace).
    pub fn ok_stderr(&self, args: &[&str]) -> String {
        let out = self.ok_output(args, &[]);
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn ok_output(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let out = self
            .command(args)
            .envs(vars.iter().copied())
            .output()
            .expect("run stud");
        assert!(
            out.status.success(),
            "stud {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        out
    }

    /// Replace the global settings file.
    pub fn settings(&self, settings: Value) {
        std::fs::write(self.home.path().join("settings.json"), settings.to_string())
            .expect("write settings");
    }

    /// The scripted provider plays `turns` from `script.json`; `extra` is
    /// merged into the settings.
    pub fn script(&self, turns: Value, extra: Value) {
        self.file("script.json", &json!({"turns": turns}).to_string());
        self.scripted_settings(extra);
    }

    /// Settings for the scripted provider reading `script.json`, with
    /// `extra` merged in.
    pub fn scripted_settings(&self, extra: Value) {
        // Chosen, so a key variable a test sets does not pick a real provider.
        let mut s = json!({
            "active": {"provider": "scripted"},
            "providers": {"scripted": {"script-file": "script.json"}}
        });
        merge(&mut s, extra);
        self.settings(s);
    }

    /// Write a file in the project.
    pub fn file(&self, name: &str, text: &str) {
        let path = self.project.path().join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("make the file's folder");
        }
        std::fs::write(path, text).expect("write project file");
    }

    /// Read a file of the project.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.project.path().join(name)).expect("read project file")
    }

    /// Copy a fixture extension into the global scope.
    pub fn install(&self, fixture: &str) -> PathBuf {
        super::install_fixture(self.home.path(), fixture)
    }

    /// Every file under the home and the project containing `needle`,
    /// compiled code aside.
    pub fn files_containing(&self, needle: &str) -> Vec<String> {
        let mut hits = Vec::new();
        for root in [self.home.path(), self.project.path()] {
            walk(root, &mut |p| {
                if p.to_string_lossy().contains("stud-compile-cache") {
                    return;
                }
                let bytes = std::fs::read(p).unwrap_or_default();
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    hits.push(p.display().to_string());
                }
            });
        }
        hits
    }
}

/// Deep-merge `b` into `a` (objects key by key, anything else replaced).
/// Send `signal` (`INT`, `KILL`, ...) to `child`, as a person's Ctrl-C or
/// a crash would.
pub fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{signal} failed");
}

pub fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

/// Call `f` on every file under `dir`.
pub fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, f);
        } else {
            f(&path);
        }
    }
}
