//! Start-up and whole-session costs of the release `stud` binary (issue
//! 18), each printed as a number (medians), never asserted:
//! - process start to the first provider request, warm compile cache;
//! - a headless `stud run -p` session of two requests (the model calls
//!   `read`, then answers) end to end: wall and CPU (user + system);
//! - process exit after the final result is written (the result line read
//!   to the process reaped);
//! - peak RSS of that session;
//! - the CPU (all threads) and page faults of a start up to its first
//!   request: how much work precedes it, whatever the cores did;
//! - the same session on a fresh machine: an empty compile cache.
//!
//! The model is `openai-compatible` against a loopback server that
//! answers at once with recorded streams (`tests/streams`).
//!
//! Run: `cargo bench -p stud --bench startup`; `STUD_BENCH_BIN=PATH` runs
//! another `stud` binary (to compare two builds, runs interleaved).
//! Peak RSS depends on how the binary came into the page cache (a fresh
//! copy measures about 4 MB more than one read back from disk): drop the
//! cache first (`echo 3 > /proc/sys/vm/drop_caches`, docs/benchmarks.md).

#[path = "../../tests/common/http.rs"]
#[allow(dead_code)]
mod http;

#[path = "common/code_order.rs"]
mod code_order;

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use http::{Reply, TestServer};
use serde_json::json;

const RUNS: usize = 20;

fn stream(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/streams")
        .join(name);
    std::fs::read_to_string(&path).expect("stream file")
}

/// One finished session's numbers.
struct Run {
    first_request: Duration,
    wall: Duration,
    cpu: Duration,
    exit: Duration,
    max_rss_kib: i64,
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

/// Run one session against a fresh pair of replies.
fn session(home: &Path, project: &Path, cache: &Path) -> Run {
    session_with(home, project, cache, json!({}))
}

/// A session with `extra` merged into the settings' top level.
fn session_with(home: &Path, project: &Path, cache: &Path, extra: serde_json::Value) -> Run {
    session_env(home, project, cache, extra, &[])
}

/// A session with `extra` settings and `env` set for the process.
fn session_env(
    home: &Path,
    project: &Path,
    cache: &Path,
    extra: serde_json::Value,
    env: &[(&str, &Path)],
) -> Run {
    // Whole bodies in one write: a server answering at once.
    let sse = |name: &str| {
        Reply::new(200, stream(name).into_bytes()).header("content-type", "text/event-stream")
    };
    let server = TestServer::start(vec![sse("openai-tool.sse"), sse("openai-text.sse")]);
    let mut settings = json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": format!("{}/v1", server.url())}}
    });
    if let (Some(s), Some(e)) = (settings.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("settings");
    let started = Instant::now();
    let mut child = headless_session(home, project, cache)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start stud");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut last = None;
        for line in std::io::BufReader::new(stdout).lines() {
            if line.map(|l| l.contains("\"result\"")).unwrap_or(false) {
                last = Some(Instant::now());
            }
        }
        last
    });
    let (status, usage) = reap(child);
    let ended = Instant::now();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "stud failed"
    );
    let result_at = reader.join().expect("reader").expect("a result line");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "two provider requests");
    Run {
        first_request: requests[0].at - started,
        wall: ended - started,
        cpu: cpu_of(&usage),
        exit: ended.saturating_duration_since(result_at),
        max_rss_kib: usage.ru_maxrss,
    }
}

/// Wait for `child` with `wait4`: its status and what the kernel counted
/// for it (all its threads). The `Child` is forgotten, so it never waits
/// on the reaped pid again.
fn reap(child: std::process::Child) -> (i32, libc::rusage) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child; wait4 writes only into the two locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4");
    std::mem::forget(child);
    (status, usage)
}

/// User and system CPU together.
fn cpu_of(usage: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The bench's session: `stud run -p` on one question, JSON out, in
/// `project` with `home` and `cache`, nothing from the caller's shell that
/// changes what it does.
fn headless_session(home: &Path, project: &Path, cache: &Path) -> Command {
    let mut command = Command::new(stud_binary());
    command
        .args([
            "run",
            "-p",
            "--output-format",
            "json",
            "what does the note say?",
        ])
        .env("STUD_HOME", home)
        .env("STUD_CACHE_DIR", cache)
        .env("OPENAI_API_KEY", "sk-bench")
        .env_remove("RUST_LOG")
        // Error values would capture backtraces (and touch the unwind
        // tables' pages) when these are set in the caller's shell.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .current_dir(project)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// What one start costs up to its first provider request: the CPU of all
/// its threads (user + system, exited ones included) and its minor page
/// faults. A listener on loopback kills the process the moment the
/// request's headers arrive; `wait4` then reports the total. Unlike the
/// wall time to the request, this does not depend on how the two cores
/// were shared, so it says how much work precedes the request.
fn before_first_request(home: &Path, project: &Path, cache: &Path) -> (Duration, i64) {
    use std::io::Read as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let settings = json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": format!("http://127.0.0.1:{port}/v1")}}
    });
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("settings");
    let child = headless_session(home, project, cache)
        .stdout(Stdio::null())
        .spawn()
        .expect("start stud");
    let pid = child.id() as libc::pid_t;
    // Should stud exit without a request, this wakes the accept below
    // with an empty connection (waitid with WNOWAIT sees the exit without
    // reaping it, so `reap` still can).
    std::thread::spawn(move || {
        // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child; waitid writes only into `info`.
        unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    });
    let (mut conn, _) = listener.accept().expect("the first request");
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf).expect("read the request");
        assert!(n > 0, "stud exited (or hung up) before its first request");
        head.extend_from_slice(&buf[..n]);
    }
    // SAFETY: `pid` is our child, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let (_, usage) = reap(child);
    (cpu_of(&usage), usage.ru_minflt)
}

/// The binary under test: `STUD_BENCH_BIN` (to compare two builds with
/// one bench binary, runs interleaved), else the one this bench was built
/// with.
fn stud_binary() -> std::path::PathBuf {
    std::env::var_os("STUD_BENCH_BIN").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_BIN_EXE_stud")),
        std::path::PathBuf::from,
    )
}

/// Trace two sessions' code pages and write the functions on them to
/// `out`, for `host/link/startup-order.txt` (see `common/code_order.rs`).
fn write_code_order(home: &Path, project: &Path, cache: &Path, out: &Path) {
    let dir = tempfile::tempdir().expect("tmp");
    let tracer = code_order::build_tracer(dir.path());
    let prefix = dir.path().join("pages");
    for _ in 0..2 {
        session_env(
            home,
            project,
            cache,
            json!({}),
            &[("LD_PRELOAD", &tracer), ("STUD_TRACE_OUT", &prefix)],
        );
    }
    let pages = code_order::traced_pages(dir.path(), "pages");
    assert!(!pages.is_empty(), "the tracer noted no pages");
    let binary = stud_binary();
    let names = code_order::functions_on(&binary, &pages);
    let header = format!(
        "# The functions a headless session runs (`stud run -p`, openai-compatible,\n\
         # one `read` call), for lld's --symbol-ordering-file (host/build.rs).\n\
         # Written by `STUD_BENCH_CODE_ORDER=FILE cargo bench -p stud --bench startup`\n\
         # from a `dist` build: {} pages of code, {} functions.\n",
        pages.len(),
        names.len()
    );
    std::fs::write(out, header + &names.join("\n") + "\n").expect("write the list");
    println!(
        "startup/code_order: {} pages ({:.1} MB) of code ran; {} functions written to {}",
        pages.len(),
        pages.len() as f64 * 4096.0 / 1e6,
        names.len(),
        out.display()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let home = tempfile::tempdir().expect("tmp");
    let project = tempfile::tempdir().expect("tmp");
    let cache = tempfile::tempdir().expect("tmp");
    std::fs::write(project.path().join("notes.txt"), "héllo wörld").expect("note");
    // Fill the compile cache.
    session(home.path(), project.path(), cache.path());
    if let Some(out) = std::env::var_os("STUD_BENCH_CODE_ORDER") {
        write_code_order(home.path(), project.path(), cache.path(), Path::new(&out));
        return;
    }
    let runs: Vec<Run> = (0..RUNS)
        .map(|_| session(home.path(), project.path(), cache.path()))
        .collect();
    println!(
        "startup/first_request (process start -> first provider request, warm)  median {:>7.2} ms",
        ms(median(runs.iter().map(|r| r.first_request).collect()))
    );
    println!(
        "startup/session_wall (headless, two requests, end to end)              median {:>7.2} ms",
        ms(median(runs.iter().map(|r| r.wall).collect()))
    );
    println!(
        "startup/session_cpu (user + system)                                    median {:>7.2} ms",
        ms(median(runs.iter().map(|r| r.cpu).collect()))
    );
    println!(
        "startup/exit (result written -> process reaped)                        median {:>7.2} ms",
        ms(median(runs.iter().map(|r| r.exit).collect()))
    );
    println!(
        "startup/peak_rss (that session)                                        median {:>7.1} MB",
        median(runs.iter().map(|r| r.max_rss_kib).collect()) as f64 / 1024.0
    );
    let before: Vec<(Duration, i64)> = (0..RUNS)
        .map(|_| before_first_request(home.path(), project.path(), cache.path()))
        .collect();
    println!(
        "startup/cpu_before_first_request (all threads; minor faults)           median {:>7.2} ms; {} faults",
        ms(median(before.iter().map(|b| b.0).collect())),
        median(before.iter().map(|b| b.1).collect())
    );
    // Issue 37: 100 Agent Skills and 100 Markdown commands on disk, runs
    // interleaved with a home that has none.
    let loaded = tempfile::tempdir().expect("tmp");
    for i in 0..100 {
        let dir = loaded.path().join("skills").join(format!("skill-{i:03}"));
        std::fs::create_dir_all(&dir).expect("skill dir");
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: skill-{i:03}\ndescription: Does task number {i} of a realistic length, and says when to use it.\n---\n# Skill {i}\nSteps.\n"),
        )
        .expect("skill");
        let commands = loaded.path().join("commands");
        std::fs::create_dir_all(&commands).expect("commands dir");
        std::fs::write(
            commands.join(format!("cmd-{i:03}.md")),
            format!("---\ndescription: Command {i}\nargument-hint: [what]\nallowed-tools: Read, Grep\n---\nDo $ARGUMENTS for command {i}.\n"),
        )
        .expect("command");
    }
    // Each home with its own warm compile cache (a cache is keyed to the
    // home that filled it: sharing one would measure recompiles).
    let loaded_cache = tempfile::tempdir().expect("tmp");
    session(loaded.path(), project.path(), loaded_cache.path());
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        without.push(session(home.path(), project.path(), cache.path()).first_request);
        with.push(session(loaded.path(), project.path(), loaded_cache.path()).first_request);
    }
    let (without, with) = (median(without), median(with));
    println!(
        "startup/first_request with 100 skills + 100 Markdown commands          median {:>7.2} ms (without: {:.2} ms, added {:+.2} ms)",
        ms(with),
        ms(without),
        ms(with) - ms(without)
    );
    // Issue 37: a `PreToolUse` command hook on the session's one `read`
    // call. Its overhead is the session's extra wall time less what the
    // same command costs run straight from here.
    const HOOK: &str = "cat > /dev/null";
    let hooks = json!({"hooks": {"command-hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": HOOK}]}
    ]}}});
    let hooked_cache = tempfile::tempdir().expect("tmp");
    let hooked = tempfile::tempdir().expect("tmp");
    session_with(
        hooked.path(),
        project.path(),
        hooked_cache.path(),
        hooks.clone(),
    );
    let (mut plain, mut with_hook, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        plain.push(session(home.path(), project.path(), cache.path()).wall);
        with_hook.push(
            session_with(
                hooked.path(),
                project.path(),
                hooked_cache.path(),
                hooks.clone(),
            )
            .wall,
        );
        let started = Instant::now();
        let mut child = Command::new("sh")
            .args(["-c", HOOK])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("sh");
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write as _;
            let _ = stdin.write_all(b"{\"hook_event_name\": \"PreToolUse\"}");
        }
        child.wait().expect("wait");
        direct.push(started.elapsed());
    }
    let (plain, with_hook, direct) = (median(plain), median(with_hook), median(direct));
    println!(
        "startup/command hook on one call: session {:.2} ms vs {:.2} ms without; the command alone {:.2} ms; overhead beyond it {:+.2} ms",
        ms(with_hook),
        ms(plain),
        ms(direct),
        ms(with_hook) - ms(plain) - ms(direct)
    );
    let fresh: Vec<Run> = (0..3)
        .map(|_| {
            let empty = tempfile::tempdir().expect("tmp");
            session(home.path(), project.path(), empty.path())
        })
        .collect();
    println!(
        "startup/first_run (empty compile cache: wall / CPU)                    median {:>7.0} ms / {:.0} ms",
        ms(median(fresh.iter().map(|r| r.wall).collect())),
        ms(median(fresh.iter().map(|r| r.cpu).collect()))
    );
    // Issue 42: the README's first command as a new user meets it (the
    // bundled defaults, offline: the `scripted` provider lists the
    // folder), with a new home and an empty compile cache every time.
    let demo: Vec<Duration> = (0..5)
        .map(|_| {
            let home = tempfile::tempdir().expect("tmp");
            let empty = tempfile::tempdir().expect("tmp");
            let started = Instant::now();
            let out = Command::new(stud_binary())
                .args(["run", "What is in this project?"])
                .env("STUD_HOME", home.path())
                .env("STUD_CACHE_DIR", empty.path())
                .env_remove("RUST_LOG")
                .env_remove("RUST_BACKTRACE")
                .env_remove("RUST_LIB_BACKTRACE")
                .current_dir(project.path())
                .stdin(Stdio::null())
                .output()
                .expect("run stud");
            let took = started.elapsed();
            assert!(out.status.success(), "the demo failed");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("notes.txt"),
                "the demo did not list the folder"
            );
            took
        })
        .collect();
    println!(
        "startup/first_run_demo (README command 1's session, new home, empty cache) median {:>7.1} ms",
        ms(median(demo))
    );
    // What starting any process costs this machine, measured the same way
    // (spawn, pipes, reap): the part of the numbers above that is not
    // stud's own.
    let spawn: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new("true")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .status()
                .expect("spawn true");
            assert!(status.success());
            started.elapsed()
        })
        .collect();
    let spawn = median(spawn);
    println!(
        "startup/spawn (start and reap `true`, the floor of any process)       median {:>7.2} ms",
        ms(spawn)
    );
    println!(
        "startup/own (first request / session wall less the spawn floor)        median {:>7.2} / {:.2} ms",
        ms(median(runs.iter().map(|r| r.first_request).collect()).saturating_sub(spawn)),
        ms(median(runs.iter().map(|r| r.wall).collect()).saturating_sub(spawn))
    );
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/startup-order.txt");
    match code_order::coverage(&stud_binary(), &list) {
        Some((found, listed)) => println!(
            "startup/code_order (functions of host/link/startup-order.txt in this binary) {found} of {listed}"
        ),
        None => println!(
            "startup/code_order: not counted (no list at {}, or no nm/readelf)",
            list.display()
        ),
    }
}
