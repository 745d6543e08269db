//! The approval key of a shell line, tested by running the line.
//!
//! `stud_sdk_shell` derives what a shell line runs by parsing it; this
//! test checks the derivation against what `sh -c` (dash, what the `bash`
//! tool runs) and `bash -c` really do. Each program runs under `strace` in
//! a throwaway project folder full of hostile furniture; the trace gives
//! the programs the *shell itself* started (not what those programs
//! started in turn). The closed-world property: a key with an
//! unclassified line is always asked, so anything goes; otherwise every
//! program the shell started must be named by a key line (same argv, the
//! path a lookup in `PATH` gives, started in the project folder with the
//! environment the tool passed), and the shell opened no network
//! connection. The programs are a corpus of known tricks plus programs
//! from a seeded proptest strategy (the same ones on every run).
//!
//! `strace` is required: the test fails without it (CI installs it).

#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use stud_sdk_shell::{UNCLASSIFIED, approval_key_in, key_lines};

/// The `PATH` the shells run with.
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// The shells every program runs in: the tool's and bash.
const SHELLS: &[&str] = &["/bin/sh", "/bin/bash"];
/// How many programs the strategy generates.
const CASES: usize = 300;
/// The strategy's seed: CI sees the same programs on every run.
const SEED: [u8; 32] = *b"stud shell keys: a closed world.";
/// A run is killed after this long.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Steps spent shrinking a failing generated program.
const SHRINK_STEPS: usize = 100;

// ---------------------------------------------------------------------
// The corpus

/// A program of the corpus and whether the deriver must classify it.
struct Case {
    line: &'static str,
    cwd: Option<&'static str>,
    classified: bool,
}

const fn yes(line: &'static str) -> Case {
    Case {
        line,
        cwd: None,
        classified: true,
    }
}

const fn no(line: &'static str) -> Case {
    Case {
        line,
        cwd: None,
        classified: false,
    }
}

const fn in_dir(line: &'static str, cwd: &'static str, classified: bool) -> Case {
    Case {
        line,
        cwd: Some(cwd),
        classified,
    }
}

/// Known tricks (each runs something the old, open-world deriver's key
/// hid, see the comments) and ordinary lines that must stay classified.
const CORPUS: &[Case] = &[
    // The security review's findings.
    no("case a in `touch pwned`|a) git status;; esac"),
    no("{ git status; } < \"$(touch pwned)\""),
    no("{ git status; } <<EOF\n$(touch pwned)\nEOF"),
    no("for PATH in bin; do git status; done"),
    no("for HOME in evil; do git status; done"),
    in_dir("git status", "evil", false),
    in_dir("git status", "bin", false),
    in_dir("git status", ".", true),
    // The unit tests' lines.
    yes("git status"),
    yes("git log; rm -rf ~/evil"),
    yes("true && false || ls | sort & pwd"),
    no("(cd evil; git status)"),
    yes("{ ls; pwd; }"),
    yes("if test -f x; then make; else echo no; fi"),
    yes("((touch pwned))"),
    yes("git status &> out"),
    yes("git status #'\ngit --version;touch pwned;#'"),
    no("echo $(touch pwned)"),
    no("echo `id`"),
    no("git $'\\x3b' touch pwned"),
    no("echo $HOME"),
    no("eval 'touch pwned'"),
    no(". ./script"),
    no("diff <(ls a) b"),
    no("cat <<EOF\nhi\nEOF"),
    no("f() { touch pwned; }; f"),
    no("for x in $(ls); do echo; done"),
    no("git status &&"),
    yes("git commit -m 'fix; stuff'"),
    yes("echo a\\;b"),
    no("FOO=1 make"),
    yes("git log > out.txt"),
    yes("echo a >> ~/.bashrc"),
    yes("make 2>&1"),
    yes("sort < in.txt"),
    no("echo a > $HOME/x"),
    // Expansions the shell does to literal-looking words.
    no("{touch,pwned}"),
    no("/bin/echo {a,b}"),
    no("g* status"),
    no("[t]ouch pwned"),
    no("tou?h pwned"),
    no("/bin/echo *"),
    no("/bin/echo a=~/x"),
    no("/bin/echo ~+"),
    no("/bin/echo ~root"),
    no("/bin/echo 'a\nb'"),
    no("git status 'a\nb'"),
    no("true {PATH}>/dev/null; git status"),
    // Builtins that change what later commands mean, or run others.
    no("alias git='touch pwned'\ngit status"),
    no("shopt -s expand_aliases\nalias git='touch pwned'\ngit status"),
    no("hash -p ./bin/git git; git status"),
    no("command touch x"),
    no("builtin eval touch x"),
    no("exec touch x"),
    no("source bin/git"),
    no("trap 'touch x' EXIT"),
    no("jobs -x touch x"),
    no("compgen -C 'touch x' a"),
    no("mapfile -C 'touch x' -c 1 < in.txt"),
    no("cd evil && git status"),
    no("chdir evil && git status"),
    no("pushd evil; git status"),
    no("export PATH=bin; git status"),
    no("declare PATH=bin; git status"),
    no("readonly PATH=bin; git status"),
    no("read PATH < path.txt; git status"),
    no("unset HOME; /usr/bin/env"),
    no("printf -v PATH bin; git status"),
    no("printf -vPATH bin; git status"),
    no("true & wait -n -p PATH; /usr/bin/env"),
    no("getopts a PATH -a; /usr/bin/env"),
    no("umask 0; touch x"),
    no("enable -n echo; echo x"),
    no("set -- a; git status"),
    no("exec 3>out; git status"),
    // Assignments.
    no("PATH=bin git status"),
    no("HOME=evil git status"),
    no("a\\\n=b git status"),
    no("a=$(touch x)"),
    no("x=1"),
    // Bash keywords and other constructs.
    no("time touch x"),
    no("coproc touch x"),
    no("select x in a; do touch x; done"),
    no("function f { touch x; }; f"),
    no("until false; do touch x; break; done"),
    no("while true; do touch x; break; done"),
    no("[[ -n $(touch x) ]]"),
    no("[[ -n x ]] && touch x"),
    no("echo $((1))"),
    no("echo ${x:-$(touch x)}"),
    no("<<<x touch y"),
    no("if git status; then ls; fi > out"),
    no("(git status) 2>&1"),
    no("{ ls; } > out"),
    // Redirections.
    no("git status > /dev/tcp/127.0.0.1/9"),
    no("git status < /dev/tcp/127.0.0.1/9"),
    // The parser reads `10` as an fd; dash passes it as an argument.
    no("git status 10>out"),
    no("/bin/echo a 12<in.txt"),
    no("git status >&out"),
    yes(">x touch y"),
    yes("2>x touch y"),
    yes("<in.txt sort -r"),
    yes("git status > ~/out"),
    yes("git status >| out <> rw 2>/dev/null"),
    yes("ls >&2 3>&-"),
    // Quoting, continuations, comments: as sh reads them.
    yes("g\\\nit status"),
    yes("git \\\nstatus"),
    yes("\\git status"),
    yes("\"git\" status"),
    yes("g\\it status"),
    yes("git status 'a b' \"c d\" a\\ b"),
    yes("ls # ; touch pwned"),
    yes("ls \\; touch pwned"),
    yes("git status\ttouch pwned"),
    yes("git status\u{a0}; touch pwned"),
    no("ls\r"),
    yes("! touch x"),
    yes("exit; touch x"),
    // Ordinary lines.
    yes("ls -la | sort > out"),
    yes("echo hi > out; cat out"),
    yes("git log HEAD~1"),
    yes("make CC=gcc"),
    yes("ls ~ ~/evil"),
    yes("find . -name x -exec ls {} ;"),
    yes("./bin/git status"),
    yes("bin/ls"),
    yes("cat in.txt | head -n 1 && wc -l in.txt"),
    yes("if git status; then ls; elif true; then pwd; else echo no; fi"),
];

// ---------------------------------------------------------------------
// Generated programs

fn pick(items: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(items).prop_map(str::to_string).boxed()
}

/// Mostly `safe`, now and then `hostile`.
fn mostly(
    safe: &'static [&'static str],
    hostile: &'static [&'static str],
) -> BoxedStrategy<String> {
    prop_oneof![40 => pick(safe), 1 => pick(hostile)].boxed()
}

/// Command names whose key is honest (quoted ones too).
#[rustfmt::skip]
const NAMES: &[&str] = &[
    "git", "git", "ls", "ls", "cat", "sort", "head", "wc", "touch", "mkdir", "env", "id", "uname",
    "printenv", "echo", "true", "false", ":", "pwd", "test", "printf", "/bin/echo", "./bin/git",
    "bin/ls", "type", "\\git", "\"ls\"", "g\\it", "'env'",
];
/// Command names the deriver must not classify.
#[rustfmt::skip]
const HOSTILE_NAMES: &[&str] = &[
    "cd", "chdir", "export", "hash", "alias", "command", "exec", "eval", "set", "read", "unset",
    "trap", ".", "source", "time", "coproc", "builtin", "declare", "local", "pushd", "umask",
    "shift", "getopts", "let", "jobs", "wait", "enable", "readonly", "typeset", "[[", "mapfile",
    "compgen", "\\cd", "e\\val", "g*", "[l]s", "{ls,-a}",
];
/// Words the shells take as written (some only after quote removal).
/// Unclassified programs run too, so no word leads out of the project
/// folder (`cd /; touch x`).
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "status", "--version", "-la", "-n", "1", "x", "out", "in.txt", "evil", "bin", "-rf", "touch",
    "git", "'a b'", "\"c d\"", "a\\ b", "'it'\\''s'", "\"q\\\"q\"", "g\\it", "~", "~/x", "HEAD~1",
    "a#b", "%", "+", "@", ",", "!", "a=b", "CC=gcc", "{}", "''", "-", "--", "'*'", "\"?\"", "\\[",
    "é", "a\u{a0}b", "'\t'", "PATH=bin", "-v", "-p", "-e", "EXIT", "a:b", "x/y", "./",
    "a\\\nb", "\"a\\\nb\"", "'{a,b}'", "\\*", "\"~\"",
];
/// Words the shells expand, or that span lines.
#[rustfmt::skip]
const HOSTILE_WORDS: &[&str] = &[
    "*", "g?t", "[t]ouch", "{touch,pwned}", "{a,b}", "{1..2}", "{PATH}", "$x", "$HOME", "\"$HOME\"",
    "$(touch p)", "`touch p`", "${x:-$(touch p)}", "$((1))", "$'\\x41'", "~nobody", "~+", "a=~/x",
    "a:~/x", "x=a:~", "'a\nb'", "a\rb", "a\u{c}b", "'\u{1b}[2K'", "a\u{2028}b",
];
/// Redirections to literal files and fds.
#[rustfmt::skip]
const REDIRECTIONS: &[&str] = &[
    "> out", ">> out", ">out2", "2>&1", ">&2", "2>/dev/null", "< in.txt", "<in.txt", "<> rw",
    ">| out", "&> out", "3>&-", "2> err", "> ~/x",
];
/// Redirections that expand, open a connection or run a program.
#[rustfmt::skip]
const HOSTILE_REDIRECTIONS: &[&str] = &[
    "> /dev/tcp/127.0.0.1/9", "<<<x", ">&out", "{PATH}>/dev/null", "> $HOME/x", "<(ls)", ">(cat)",
    "< \"$(touch p)\"", "> *", "10>out", "12<in.txt",
];
/// Assignments before a command name.
#[rustfmt::skip]
const ASSIGNMENTS: &[&str] = &[
    "PATH=bin", "HOME=evil", "x=1", "a=$(touch p)", "GIT_DIR=evil",
];
/// What separates the pipelines of a list (a comment ends a line).
const SEPARATORS: &[&str] = &["; ", " && ", " || ", " & ", "\n", ";\n", " #c;'\n"];
/// Here-documents, each ending its line.
const HEREDOCS: &[&str] = &[
    "cat <<E\nx\nE\n",
    "cat <<'E'\n$(touch p)\nE\n",
    "cat <<E\n$(touch p)\nE\n",
    "{ git status; } <<E\n$(touch p)\nE\n",
];

/// A simple command: maybe an assignment, a name, arguments, and
/// redirections before the name or after the arguments.
fn simple() -> BoxedStrategy<String> {
    (
        prop::option::weighted(0.02, pick(ASSIGNMENTS)),
        mostly(NAMES, HOSTILE_NAMES),
        prop::collection::vec(mostly(WORDS, HOSTILE_WORDS), 0..4),
        prop::option::weighted(
            0.3,
            (mostly(REDIRECTIONS, HOSTILE_REDIRECTIONS), any::<bool>()),
        ),
    )
        .prop_map(|(assign, name, args, redirect)| {
            let mut parts: Vec<String> = assign.into_iter().collect();
            if let Some((r, true)) = &redirect {
                parts.push(r.clone());
            }
            parts.push(name);
            parts.extend(args);
            if let Some((r, false)) = redirect {
                parts.push(r);
            }
            parts.join(" ")
        })
        .boxed()
}

/// `body` followed by `sep`, unless it already ends a line (a
/// here-document or a comment must not be followed by `;` or `&&`).
fn then(body: &str, sep: &str) -> String {
    if body.ends_with('\n') {
        body.to_string()
    } else {
        format!("{body}{sep}")
    }
}

/// A compound command around `body`, sometimes with a redirection.
fn compound(body: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let shapes: &'static [&'static str] = &[
        "( B )",
        "( B )",
        "{ B; }",
        "{ B; }",
        "if B; then B; fi",
        "if B; then B; else B; fi",
        "if B; then B; elif B; then B; fi",
        "for x in a b; do B; done",
        "while false; do B; done",
        "until true; do B; done",
        "case x in x) B;; esac",
        "case x in y|x) B;; esac",
        "f() { B; }; f",
    ];
    (
        prop::sample::select(shapes),
        prop::collection::vec(body, 3),
        prop::option::weighted(0.15, mostly(REDIRECTIONS, HOSTILE_REDIRECTIONS)),
    )
        .prop_map(|(shape, bodies, redirect)| {
            let out = fill(shape, &bodies);
            match redirect {
                Some(r) => format!("{out} {r}"),
                None => out,
            }
        })
        .boxed()
}

/// `shape` with each `B` replaced by the next body. After a body that
/// ends a line, a `;` that would stand alone on the next line is dropped
/// (`;;` stays: it ends a `case` item there too).
fn fill(shape: &str, bodies: &[String]) -> String {
    let mut pieces = shape.split('B');
    let mut out = pieces.next().unwrap_or_default().to_string();
    for (piece, body) in pieces.zip(bodies.iter().cycle()) {
        out.push_str(body);
        let lone = body.ends_with('\n') && piece.starts_with(';') && !piece.starts_with(";;");
        out.push_str(if lone { &piece[1..] } else { piece });
    }
    out
}

/// A pipeline of `command`s, sometimes negated.
fn pipeline(command: BoxedStrategy<String>) -> BoxedStrategy<String> {
    (
        prop::bool::weighted(0.1),
        prop::collection::vec(command, 1..3),
    )
        .prop_map(|(bang, seq)| format!("{}{}", if bang { "! " } else { "" }, seq.join(" | ")))
        .boxed()
}

/// A list of pipelines (and now and then a here-document) with
/// separators, the last separator dropped.
fn list(command: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let item = prop_oneof![30 => pipeline(command), 1 => pick(HEREDOCS)];
    prop::collection::vec((item, pick(SEPARATORS)), 1..4)
        .prop_map(|items| {
            let mut out = String::new();
            let last = items.len() - 1;
            for (i, (item, sep)) in items.iter().enumerate() {
                out.push_str(&if i == last {
                    item.clone()
                } else {
                    then(item, sep)
                });
            }
            out
        })
        .boxed()
}

/// Whole programs: lists of commands, nested up to two levels.
fn program() -> BoxedStrategy<String> {
    let command = simple().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![5 => simple(), 1 => compound(list(inner))].boxed()
    });
    list(command.boxed())
}

// ---------------------------------------------------------------------
// Running a program

/// Writes the hostile project folder: programs named like real ones
/// (`bin/git`, `bin/ls`, and `10/git`.. for bash's `{var}>` fds), a git
/// folder whose config runs a program, a `.gitconfig` in `HOME`, files
/// named like options and commands, and files the corpus reads.
fn furnish(root: &Path) {
    let hostile = "#!/bin/sh\ntouch pwned-bin\n";
    for dir in [
        "bin",
        "10",
        "11",
        "12",
        "evil/.git/objects",
        "evil/.git/refs",
    ] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    for exe in ["bin/git", "bin/ls", "10/git", "11/git", "12/git"] {
        fs::write(root.join(exe), hostile).unwrap();
        fs::set_permissions(root.join(exe), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let files = [
        ("git", hostile),
        ("touch", hostile),
        ("-rf", "x\n"),
        ("in.txt", "b\na\n"),
        ("path.txt", "bin\n"),
        ("script", "touch pwned-script\n"),
        (".gitconfig", "[alias]\n\tst = !touch pwned-alias\n"),
        (
            "evil/.gitconfig",
            "[core]\n\tfsmonitor = touch pwned-home\n",
        ),
        ("evil/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "evil/.git/config",
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch pwned-fsmonitor\n",
        ),
    ];
    for (name, text) in files {
        fs::write(root.join(name), text).unwrap();
    }
}

/// One program run by one shell.
struct Run {
    /// The project folder (also `HOME`), canonical.
    root: PathBuf,
    /// The folder the shell ran in.
    dir: PathBuf,
    trace: String,
    timed_out: bool,
}

/// Runs `program` with `shell -c` under strace, in a fresh project
/// folder (or its subfolder `cwd`), with a cleared environment.
fn run(shell: &str, program: &str, cwd: Option<&str>) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("project");
    fs::create_dir(&root).unwrap();
    furnish(&root);
    let dir = root.join(cwd.unwrap_or("."));
    let dir = normalize(&dir);
    let trace_file = tmp.path().join("trace");
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-v", "-s", "4096"])
        .args(["-e", "trace=process,chdir,fchdir,connect", "-o"])
        .arg(&trace_file)
        .args(["--", shell, "-c", program])
        .current_dir(&dir)
        .env_clear()
        .env("PATH", PATH)
        .env("HOME", &root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut timed_out = false;
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > TIMEOUT {
            // strace and every process it traces share its group.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            timed_out = true;
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let trace = fs::read_to_string(&trace_file).unwrap_or_default();
    Run {
        root,
        dir,
        trace,
        timed_out,
    }
}

/// `path` with `.` and `..` resolved by name.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

// ---------------------------------------------------------------------
// Reading the trace

/// What one traced process did, in order.
#[derive(Debug)]
enum Event {
    /// It created the process with this pid.
    Fork(u32),
    /// It started a program (a successful execve).
    Exec(Exec),
    Chdir(String),
    /// A change of folder by descriptor: the folder is unknown.
    Fchdir,
    /// An IPv4 or IPv6 connection attempt.
    Connect(String),
}

#[derive(Debug, Clone)]
struct Exec {
    path: String,
    argv: Vec<String>,
    env: Vec<String>,
}

/// A program the shell itself started, with the folder it started in
/// (`None` when a shell changed folder by descriptor).
#[derive(Debug)]
struct Started {
    pid: u32,
    exec: Exec,
    cwd: Option<PathBuf>,
}

/// What the shell did, read from a trace.
#[derive(Debug, Default)]
struct Behaviour {
    started: Vec<Started>,
    /// Network connections a shell process attempted.
    connects: Vec<String>,
    /// Processes whose parent the trace does not show.
    orphans: Vec<u32>,
}

/// The syscall lines of a trace, one per call: strace splits a call that
/// another process interrupts into `<unfinished ...>` and `<... resumed>`.
fn calls(trace: &str) -> Vec<(u32, String)> {
    let mut pending: HashMap<u32, String> = HashMap::new();
    let mut out = Vec::new();
    for line in trace.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        // strace pads short pids: `340   execve(...)`.
        let rest = rest.trim_start();
        let rest = if rest.starts_with("<... ") {
            let Some((_, tail)) = rest.split_once("resumed>") else {
                continue;
            };
            pending.remove(&pid).unwrap_or_default() + tail
        } else {
            rest.to_string()
        };
        match rest.strip_suffix("<unfinished ...>") {
            Some(head) => {
                pending.insert(pid, head.to_string());
            }
            None => out.push((pid, rest)),
        }
    }
    out
}

/// A call's name, arguments and return value (`0`, `-1`, `?`, a pid).
fn split_call(call: &str) -> Option<(&str, &str, &str)> {
    let open = call.find('(')?;
    let name = &call[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    // The return value follows the last `)` that is followed by ` = `.
    let mut end = call.len();
    loop {
        let eq = call[..end].rfind("= ")?;
        let before = call[..eq].trim_end();
        if let Some(args) = before.strip_suffix(')') {
            let ret = call[eq + 2..].split_whitespace().next()?;
            return Some((name, args.get(open + 1..)?, ret));
        }
        end = eq;
    }
}

/// A cursor over strace's rendering of arguments.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn eat(&mut self, lit: &str) -> Option<()> {
        self.text[self.at..]
            .starts_with(lit.as_bytes())
            .then(|| self.at += lit.len())
    }

    /// A quoted string with C escapes; `None` if strace cut it (`"..."...`).
    fn string(&mut self) -> Option<String> {
        self.eat("\"")?;
        let mut bytes = Vec::new();
        loop {
            let c = *self.text.get(self.at)?;
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => bytes.push(self.escape()?),
                _ => bytes.push(c),
            }
        }
        if self.eat("...").is_some() {
            return None;
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn escape(&mut self) -> Option<u8> {
        let c = *self.text.get(self.at)?;
        self.at += 1;
        Some(match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'v' => 0x0b,
            b'f' => 0x0c,
            b'x' => self.number(16, 2)?,
            b'0'..=b'7' => {
                self.at -= 1;
                self.number(8, 3)?
            }
            other => other,
        })
    }

    fn number(&mut self, radix: u32, max: usize) -> Option<u8> {
        let start = self.at;
        while self.at - start < max
            && self
                .text
                .get(self.at)
                .is_some_and(|c| (*c as char).is_digit(radix))
        {
            self.at += 1;
        }
        let digits = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        u8::from_str_radix(digits, radix).ok()
    }

    /// `["a", "b"]`.
    fn strings(&mut self) -> Option<Vec<String>> {
        self.eat("[")?;
        let mut out = Vec::new();
        if self.eat("]").is_some() {
            return Some(out);
        }
        loop {
            out.push(self.string()?);
            if self.eat("]").is_some() {
                return Some(out);
            }
            self.eat(", ")?;
        }
    }
}

/// `"path", ["argv"...], ["env"...]`.
fn parse_exec(args: &str) -> Option<Exec> {
    let mut c = Cursor {
        text: args.as_bytes(),
        at: 0,
    };
    let path = c.string()?;
    c.eat(", ")?;
    let argv = c.strings()?;
    c.eat(", ")?;
    let env = c.strings()?;
    Some(Exec { path, argv, env })
}

/// The calls of a trace that matter here, in order; an error for an
/// `execve` it cannot read (rather than a program it would not check).
fn events(trace: &str) -> Result<Vec<(u32, Event)>, String> {
    let mut out = Vec::new();
    for (pid, call) in calls(trace) {
        let Some((name, args, ret)) = split_call(&call) else {
            continue;
        };
        let ok = ret == "0";
        let event = match name {
            "clone" | "clone3" | "fork" | "vfork" => match ret.parse::<u32>() {
                Ok(child) if child > 0 => Event::Fork(child),
                _ => continue,
            },
            "execve" | "execveat" if ok => {
                Event::Exec(parse_exec(args).ok_or_else(|| format!("unreadable execve: {call}"))?)
            }
            "chdir" if ok => {
                let mut c = Cursor {
                    text: args.as_bytes(),
                    at: 0,
                };
                Event::Chdir(
                    c.string()
                        .ok_or_else(|| format!("unreadable chdir: {call}"))?,
                )
            }
            "fchdir" if ok => Event::Fchdir,
            "connect" if args.contains("AF_INET") => Event::Connect(call.clone()),
            _ => continue,
        };
        out.push((pid, event));
    }
    Ok(out)
}

/// What a traced process is at a point of its life.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// strace's child, before it becomes the shell.
    Launcher,
    /// The shell or a copy of it (a subshell, a child about to exec).
    Shell,
    /// A program the shell started, or one of its descendants.
    Program,
}

/// Follows the process tree from the first process: a fork of a shell is
/// a shell until it execs; what it execs is a started program.
fn behaviour(trace: &str, dir: &Path) -> Result<Behaviour, String> {
    let events = events(trace)?;
    let Some(&(first, _)) = events.first() else {
        return Err("empty trace".into());
    };
    let mut by_pid: HashMap<u32, Vec<&Event>> = HashMap::new();
    for (pid, event) in &events {
        by_pid.entry(*pid).or_default().push(event);
    }
    let mut out = Behaviour::default();
    let mut seen = vec![first];
    let mut queue = vec![(first, Role::Launcher, Some(dir.to_path_buf()))];
    while let Some((pid, mut role, mut cwd)) = queue.pop() {
        for event in by_pid.get(&pid).into_iter().flatten() {
            match event {
                Event::Fork(child) => {
                    seen.push(*child);
                    queue.push((*child, role, cwd.clone()));
                }
                Event::Exec(exec) => {
                    if role == Role::Shell {
                        out.started.push(Started {
                            pid,
                            exec: exec.clone(),
                            cwd: cwd.clone(),
                        });
                    }
                    role = if role == Role::Launcher {
                        Role::Shell
                    } else {
                        Role::Program
                    };
                }
                Event::Chdir(to) => cwd = cwd.map(|c| normalize(&c.join(to))),
                Event::Fchdir => cwd = None,
                Event::Connect(call) if role == Role::Shell => out.connects.push(call.clone()),
                Event::Connect(_) => {}
            }
        }
    }
    out.orphans = by_pid
        .keys()
        .filter(|p| !seen.contains(p))
        .copied()
        .collect();
    Ok(out)
}

// ---------------------------------------------------------------------
// The closed-world check

/// Whether a key line names `argv`: its words (quotes removed by `shell-words`)
/// are `argv`, either as they are or with the redirections that stay on
/// the line (`< in`, `2>& 1`) taken out; `~` and `~/...` also stand for
/// their expansion.
fn names(line: &str, argv: &[String], home: &str) -> bool {
    let Ok(words) = shell_words::split(line) else {
        return false;
    };
    same_words(&words, argv, home) || same_words(&without_redirections(&words), argv, home)
}

fn same_words(words: &[String], argv: &[String], home: &str) -> bool {
    words.len() == argv.len()
        && words.iter().zip(argv).all(|(w, a)| {
            w == a
                || (w == "~" && a == home)
                || w.strip_prefix('~')
                    .is_some_and(|rest| rest.starts_with('/') && *a == format!("{home}{rest}"))
        })
}

/// `words` without redirection operators and the word after each.
fn without_redirections(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
        } else if is_redirection(w) {
            skip = true;
        } else {
            out.push(w.clone());
        }
    }
    out
}

fn is_redirection(word: &str) -> bool {
    let op = word.trim_start_matches(|c: char| c.is_ascii_digit());
    ["<", ">", ">>", "<>", ">|", "<&", ">&"].contains(&op)
}

/// Where a `PATH` lookup of `name` from `dir` leads.
fn lookup(name: &str, dir: &Path) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(normalize(&dir.join(name)));
    }
    PATH.split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// What is wrong with a started program under `keys`: nothing when a key
/// line names it, it is the program its name finds, it started in the
/// project folder and its environment is the one the tool passed (plus
/// what the shells add on their own: `PWD`, `OLDPWD`, `SHLVL`, `_`).
fn problems(started: &Started, keys: &[String], run: &Run) -> Vec<String> {
    let exec = &started.exec;
    let home = run.root.to_string_lossy();
    let mut out = Vec::new();
    if !keys.iter().any(|k| names(k, &exec.argv, &home)) {
        out.push(format!("no key line names argv {:?}", exec.argv));
    }
    let expected = exec.argv.first().and_then(|a| lookup(a, &run.dir));
    let actual = normalize(&run.dir.join(&exec.path));
    if expected.as_ref() != Some(&actual) {
        out.push(format!("ran {actual:?}, its name finds {expected:?}"));
    }
    if started.cwd.as_ref() != Some(&run.root) {
        out.push(format!("ran in {:?}, not the project folder", started.cwd));
    }
    for var in &exec.env {
        let (name, value) = var.split_once('=').unwrap_or((var, ""));
        let fine = match name {
            "PATH" => value == PATH,
            "HOME" => value == home,
            "PWD" => Path::new(value) == run.root,
            "OLDPWD" | "SHLVL" | "_" => true,
            _ => false,
        };
        if !fine {
            out.push(format!("environment has {var:?}"));
        }
    }
    for needed in ["PATH", "HOME"] {
        if !exec
            .env
            .iter()
            .any(|v| v.split_once('=').is_some_and(|(n, _)| n == needed))
        {
            out.push(format!("environment lacks {needed}"));
        }
    }
    out
}

/// A closed-world failure: what ran that the key did not say.
struct Finding {
    program: String,
    cwd: Option<String>,
    shell: &'static str,
    keys: Vec<String>,
    problems: Vec<String>,
    excerpt: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "program {:?} (cwd {:?}) under {}",
            self.program, self.cwd, self.shell
        )?;
        writeln!(f, "  key lines: {:?}", self.keys)?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        writeln!(f, "  trace:")?;
        for line in self.excerpt.lines() {
            writeln!(f, "    {line}")?;
        }
        Ok(())
    }
}

/// The key lines of a program as the kernel reads them: the `bash`
/// tool's key ([`key_lines`] joined, or one line naming the folder), split
/// into lines, so a key line with a newline in it counts as two.
fn keys_of(program: &str, cwd: Option<&str>) -> Vec<String> {
    approval_key_in(program, cwd)
        .lines()
        .map(str::to_string)
        .collect()
}

fn classified(keys: &[String]) -> bool {
    !keys.iter().any(|k| k.starts_with(UNCLASSIFIED))
}

/// What checking one program found.
#[derive(Default)]
struct Checked {
    /// The closed-world failures.
    findings: Vec<Finding>,
    /// How many started programs were held against a classified key.
    started: usize,
}

/// Runs `program` in every shell and checks what it started.
fn check(program: &str, cwd: Option<&str>) -> Checked {
    let keys = keys_of(program, cwd);
    let mut out = Checked::default();
    for &shell in SHELLS {
        let run = run(shell, program, cwd);
        if !classified(&keys) {
            // Asked every time: whatever it runs, the user sees it first.
            continue;
        }
        let mut problems = Vec::new();
        let mut pids = Vec::new();
        match behaviour(&run.trace, &run.dir) {
            Ok(b) => {
                out.started += b.started.len();
                for started in &b.started {
                    let found = problems_of(started, &keys, &run);
                    if !found.is_empty() {
                        pids.push(started.pid);
                    }
                    problems.extend(found);
                }
                problems.extend(
                    b.connects
                        .iter()
                        .map(|c| format!("the shell connected: {c}")),
                );
                if !b.orphans.is_empty() {
                    problems.push(format!("processes of unknown parent: {:?}", b.orphans));
                }
            }
            Err(e) => problems.push(e),
        }
        if run.timed_out {
            problems.push(format!("killed after {TIMEOUT:?}"));
        }
        if !problems.is_empty() {
            out.findings.push(Finding {
                program: program.to_string(),
                cwd: cwd.map(str::to_string),
                shell,
                keys: keys.clone(),
                problems,
                excerpt: excerpt(&run.trace, &pids),
            });
        }
    }
    out
}

fn problems_of(started: &Started, keys: &[String], run: &Run) -> Vec<String> {
    problems(started, keys, run)
        .into_iter()
        .map(|p| format!("{}: {p}", started.exec.path))
        .collect()
}

/// The trace lines about the offending processes (or its start).
fn excerpt(trace: &str, pids: &[u32]) -> String {
    let lines: Vec<&str> = trace
        .lines()
        .filter(|l| {
            pids.is_empty()
                || l.split_once(' ')
                    .and_then(|(p, _)| p.parse::<u32>().ok())
                    .is_some_and(|p| pids.contains(&p))
        })
        .filter(|l| !l.contains("exit_group") && !l.contains("--- SIG"))
        .take(12)
        .collect();
    lines.join("\n")
}

// ---------------------------------------------------------------------
// The test

/// Runs `jobs` on a few threads, keeping their order.
fn parallel<T: Sync, R: Send>(jobs: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let r = work(job);
                    results.lock().unwrap().push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// Fails with a clear message when a tool the test needs is missing.
fn require(tool: &str, args: &[&str]) {
    let ok = Command::new(tool)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "`{tool}` is required by this test (it runs shell lines with sh and bash \
         under strace); install it, e.g. `apt-get install strace bash dash`"
    );
}

/// The generated programs, with the trees that shrink them.
fn generated() -> Vec<Box<dyn ValueTree<Value = String>>> {
    let config = Config {
        cases: CASES as u32,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &SEED);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = program();
    (0..CASES)
        .map(|_| strategy.new_tree(&mut runner).unwrap())
        .collect()
}

/// The simplest version of a failing generated program that still fails.
fn shrink(tree: &mut dyn ValueTree<Value = String>) -> String {
    let mut smallest = tree.current();
    let mut failing = true;
    for _ in 0..SHRINK_STEPS {
        let moved = if failing {
            tree.simplify()
        } else {
            tree.complicate()
        };
        if !moved {
            break;
        }
        failing = !check(&tree.current(), None).findings.is_empty();
        if failing {
            smallest = tree.current();
        }
    }
    smallest
}

#[test]
fn every_program_the_shell_starts_is_named_by_the_key() {
    require("strace", &["-V"]);
    require("/bin/sh", &["-c", "true"]);
    require("/bin/bash", &["-c", "true"]);

    let mut trees = generated();
    let programs: Vec<String> = trees.iter().map(|t| t.current()).collect();
    let corpus_results = parallel(CORPUS, |case| check(case.line, case.cwd));
    let generated_results = parallel(&programs, |p| check(p, None));

    let mut report = Vec::new();
    let mut failed_corpus = Vec::new();
    for (case, checked) in CORPUS.iter().zip(&corpus_results) {
        if !checked.findings.is_empty() {
            failed_corpus.push(format!("{:?} (cwd {:?})", case.line, case.cwd));
        }
        report.extend(checked.findings.iter().map(ToString::to_string));
    }
    let mut failed_generated = Vec::new();
    for (i, checked) in generated_results.iter().enumerate() {
        if checked.findings.is_empty() {
            continue;
        }
        let smallest = shrink(trees[i].as_mut());
        failed_generated.push(format!("{:?} (shrunk to {smallest:?})", programs[i]));
        report.extend(checked.findings.iter().map(ToString::to_string));
        let again = check(&smallest, None).findings;
        report.extend(again.iter().map(ToString::to_string));
    }
    let started: usize = corpus_results
        .iter()
        .chain(&generated_results)
        .map(|c| c.started)
        .sum();

    let misclassified: Vec<String> = CORPUS
        .iter()
        .filter(|c| classified(&keys_of(c.line, c.cwd)) != c.classified)
        .map(|c| {
            format!(
                "{:?} (cwd {:?}): keys {:?}",
                c.line,
                c.cwd,
                keys_of(c.line, c.cwd)
            )
        })
        .collect();
    let multiline: Vec<&str> = CORPUS
        .iter()
        .map(|c| c.line)
        .chain(programs.iter().map(String::as_str))
        .filter(|p| key_lines(p).iter().any(|l| l.contains(['\n', '\r'])))
        .collect();
    let classified_share = programs
        .iter()
        .filter(|p| classified(&keys_of(p, None)))
        .count();
    eprintln!(
        "{} corpus programs, {} generated ({} classified), each run in {} shells; \
         {started} programs the shells started checked against their keys",
        CORPUS.len(),
        programs.len(),
        classified_share,
        SHELLS.len()
    );

    assert!(
        failed_corpus.is_empty() && failed_generated.is_empty(),
        "keys hid what the shell ran.\ncorpus: {failed_corpus:#?}\ngenerated: \
         {failed_generated:#?}\n\n{}",
        report.join("\n")
    );
    assert!(
        multiline.is_empty(),
        "key lines that span lines (the kernel would read them as several): {multiline:#?}"
    );
    assert!(
        misclassified.is_empty(),
        "corpus programs classified otherwise than expected: {misclassified:#?}"
    );
    assert!(
        classified_share * 4 >= programs.len(),
        "only {classified_share} of {} generated programs are classified: the test would be vacuous",
        programs.len()
    );
}

/// The trace reader itself: split calls, forks before their parent's
/// return, and programs started by programs.
#[test]
fn the_trace_reader_follows_the_shell_only() {
    let trace = r#"100   execve("/bin/sh", ["sh", "-c", "x"], ["PATH=/p"]) = 0
100 vfork( <unfinished ...>
101 execve("/usr/local/bin/git", ["git"], []) = -1 ENOENT (No such file or directory)
101 execve("/usr/bin/git", ["git", "a\"b\n\303\251"], ["HOME=/h"] <unfinished ...>
100 <... vfork resumed>)              = 101
101 <... execve resumed>)             = 0
101 clone(child_stack=NULL, flags=SIGCHLD) = 102
102 execve("/usr/bin/less", ["less"], []) = 0
100 chdir("evil")                     = 0
100 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 103
103 execve("./x", ["./x"], []) = 0
103 connect(3, {sa_family=AF_INET, sin_port=htons(9)}, 16) = -1 ECONNREFUSED (Connection refused)
100 connect(3, {sa_family=AF_INET, sin_port=htons(9)}, 16) = -1 ECONNREFUSED (Connection refused)
100 exit_group(0)                     = ?
"#;
    let b = behaviour(trace, Path::new("/p")).unwrap();
    let started: Vec<_> = b
        .started
        .iter()
        .map(|s| (s.exec.path.as_str(), s.exec.argv.clone(), s.cwd.clone()))
        .collect();
    assert_eq!(
        started,
        [
            (
                "./x",
                vec!["./x".to_string()],
                Some(PathBuf::from("/p/evil"))
            ),
            (
                "/usr/bin/git",
                vec!["git".to_string(), "a\"b\né".to_string()],
                Some(PathBuf::from("/p"))
            ),
        ]
    );
    assert_eq!(b.connects.len(), 1);
    assert!(b.orphans.is_empty());
}

#[test]
fn key_lines_name_argv_with_quotes_removed() {
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(names("g\\it 'a b'", &argv(&["git", "a b"]), "/h"));
    assert!(names(
        "sort -r < in.txt 2>& 1",
        &argv(&["sort", "-r"]),
        "/h"
    ));
    assert!(names("ls ~ ~/x", &argv(&["ls", "/h", "/h/x"]), "/h"));
    assert!(!names("ls ~ ~/x", &argv(&["ls", "/h", "/h/y"]), "/h"));
    assert!(!names("git status", &argv(&["git"]), "/h"));
    assert!(!names("(unclassified) git", &argv(&["git"]), "/h"));
}
