//! The full-screen UI, measured the way a person meets it: the `stud`
//! binary on a pseudo-terminal, its screen read through a terminal
//! emulator (`vt100`). Numbers are printed, not asserted.
//! - key press to screen update (median, p99) while a long answer streams;
//! - a 100,000-token answer through the bus: how long the turn takes with
//!   the UI drawing it versus headless, and how many events the UI was
//!   spared (dropped and coalesced) instead of slowing the kernel;
//! - on a 200x60 screen full of transcript: a resize until the new frame
//!   is drawn, and `/clear` until the next session's clean screen shows.
//!
//! Run: `cargo bench -p stud --bench tui`.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use serde_json::{Value, json};

const COLS: u16 = 120;
const ROWS: u16 = 40;

struct Term {
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Term {
    fn spawn(home: &Path, project: &Path, args: &[&str]) -> Term {
        Term::sized(home, project, args, COLS, ROWS)
    }

    fn sized(home: &Path, project: &Path, args: &[&str], cols: u16, rows: u16) -> Term {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_stud"));
        cmd.args(args);
        cmd.cwd(project);
        cmd.env("STUD_HOME", home);
        cmd.env("TERM", "xterm-256color");
        for v in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "STUD_UI",
        ] {
            cmd.env_remove(v);
        }
        let child = pty.slave.spawn_command(cmd).expect("spawn stud");
        let mut reader = pty.master.try_clone_reader().expect("reader");
        let writer = pty.master.take_writer().expect("writer");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let feed = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                feed.lock().expect("screen").process(&buf[..n]);
            }
        });
        Term {
            master: pty.master,
            writer,
            screen,
            child,
        }
    }

    fn resize(&mut self, cols: u16, rows: u16) {
        self.screen
            .lock()
            .expect("screen")
            .screen_mut()
            .set_size(rows, cols);
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize");
    }

    /// Wait until the last row shows `needle` (a frame laid out for the
    /// screen's current size has its status line there).
    fn wait_for_last_row(&self, needle: &str, timeout: Duration) -> Duration {
        let start = Instant::now();
        loop {
            let last = self
                .contents()
                .lines()
                .last()
                .map(str::to_string)
                .unwrap_or_default();
            if last.contains(needle) {
                return start.elapsed();
            }
            assert!(start.elapsed() < timeout, "no status line at the bottom");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn contents(&self) -> String {
        self.screen.lock().expect("screen").screen().contents()
    }

    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("type");
        self.writer.flush().expect("flush");
    }

    fn wait_for(&self, needle: &str, timeout: Duration) -> Duration {
        let start = Instant::now();
        while !self.contents().contains(needle) {
            assert!(
                start.elapsed() < timeout,
                "never showed {needle:?}:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        start.elapsed()
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn setup(turns: Value) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("home");
    let project = tempfile::tempdir().expect("project");
    std::fs::write(
        project.path().join("script.json"),
        json!({"turns": turns, "chunk": 1}).to_string(),
    )
    .expect("script");
    std::fs::write(
        home.path().join("settings.json"),
        json!({"active": {"provider": "scripted"}, "providers": {"scripted": {"script-file": "script.json"}}})
            .to_string(),
    )
    .expect("settings");
    (home, project)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// Keys typed while a long answer streams: time until each shows.
fn key_to_screen() {
    let long: String = "word ".repeat(400_000);
    let (home, project) = setup(json!([{"text": long}]));
    let mut t = Term::spawn(home.path(), project.path(), &[]);
    t.wait_for("/help", Duration::from_secs(60));
    t.send(b"go\r");
    t.wait_for("working", Duration::from_secs(20));
    // A marker first (not measured), so every measured prefix is text
    // nothing else on the screen shows; then 100 keys (the input box shows
    // them all at 120 columns).
    let marker = "QZX";
    t.send(marker.as_bytes());
    t.wait_for(marker, Duration::from_secs(10));
    let typed: String = (0..100u32)
        .map(|i| char::from(b"ZqXvKpWmJRtYBnLHcFDsGk"[(i as usize * 7 + i as usize / 3) % 22]))
        .collect();
    let mut times = Vec::new();
    for i in 0..typed.len() {
        if !t.contents().contains("working") {
            break;
        }
        t.send(&typed.as_bytes()[i..=i]);
        times.push(t.wait_for(
            &format!("{marker}{}", &typed[..=i]),
            Duration::from_secs(10),
        ));
        std::thread::sleep(Duration::from_millis(20));
    }
    times.sort();
    println!(
        "tui: key press to screen while streaming: median {:.2} ms, p99 {:.2} ms ({} keys)",
        percentile(&times, 0.5).as_secs_f64() * 1000.0,
        percentile(&times, 0.99).as_secs_f64() * 1000.0,
        times.len()
    );
}

/// Kernel-side duration of the turn and drop notices, from the jsonl log.
fn turn_from_log(home: &Path) -> (u64, u64) {
    let dir = home.join("data").join("jsonl");
    let mut start = None;
    let mut end = None;
    let mut dropped = 0;
    for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(f.path()).unwrap_or_default();
        for l in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(l) else {
                continue;
            };
            match v["name"].as_str() {
                Some("turn.start") => start = v["ts"].as_u64(),
                Some("turn.end") => end = v["ts"].as_u64(),
                Some("bus.dropped") if v["payload"]["subscriber"] == "tui" => {
                    dropped += v["payload"]["count"].as_u64().unwrap_or(0)
                }
                _ => {}
            }
        }
    }
    (end.unwrap_or(0).saturating_sub(start.unwrap_or(0)), dropped)
}

/// 100,000 one-character deltas: with the UI drawing, and headless.
fn stream_100k() {
    let text: String = "abcdefghij".repeat(10_000);
    let (home, project) = setup(json!([{"text": text.clone()}, {"text": "done"}]));
    let mut t = Term::spawn(home.path(), project.path(), &[]);
    t.wait_for("/help", Duration::from_secs(60));
    let started = Instant::now();
    t.send(b"go\r");
    t.wait_for("working", Duration::from_secs(20));
    let mut seen = Duration::ZERO;
    while t.contents().contains("working") {
        seen = started.elapsed();
        std::thread::sleep(Duration::from_millis(1));
    }
    t.send(b"/exit\r");
    std::thread::sleep(Duration::from_millis(1500));
    let (kernel_ms, dropped) = turn_from_log(home.path());

    let (home2, project2) = setup(json!([{"text": text}]));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stud"))
        .args(["-p", "go"])
        .current_dir(project2.path())
        .env("STUD_HOME", home2.path())
        .output()
        .expect("headless run");
    assert!(out.status.success());
    let (headless_ms, _) = turn_from_log(home2.path());
    println!(
        "tui: 100,000-token answer: turn {kernel_ms} ms with the full-screen UI ({:.0}k tokens/s), {headless_ms} ms headless; on screen finished {:.0} ms after Enter; {dropped} events coalesced for the UI",
        100.0 / (kernel_ms.max(1) as f64 / 1000.0),
        seen.as_secs_f64() * 1000.0
    );
}

/// A 200x60 screen full of transcript: resizes (one row less, then back)
/// until the new frame is drawn, and `/clear` until the next session's
/// clean screen shows its notice with the old transcript gone.
fn redraw_200x60() {
    let rows: Vec<String> = (0..200)
        .map(|n| format!("row {n} {}", "text ".repeat(n % 35)))
        .collect();
    let (home, project) = setup(json!([]));
    // Whole lines at a time: this measures redraws, not streaming.
    std::fs::write(
        project.path().join("script.json"),
        json!({"turns": [{"text": rows.join("\n")}]}).to_string(),
    )
    .expect("script");
    let mut t = Term::sized(home.path(), project.path(), &[], 200, 60);
    t.wait_for("/help", Duration::from_secs(60));
    let mut resizes = Vec::new();
    let mut clears = Vec::new();
    // From the old screen gone (the new session's UI cleared it) to its
    // whole first frame: what the person sees as the redraw.
    let mut repaints = Vec::new();
    for _ in 0..8 {
        t.send(b"go\r");
        t.wait_for("row 199", Duration::from_secs(60));
        while t.contents().contains("working") {
            std::thread::sleep(Duration::from_millis(5));
        }
        for height in [59u16, 60, 59, 60] {
            let start = Instant::now();
            t.resize(200, height);
            t.wait_for_last_row("scripted/", Duration::from_secs(10));
            resizes.push(start.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        let start = Instant::now();
        t.send(b"/clear\r");
        let mut gone = None;
        loop {
            let now = t.contents();
            if gone.is_none() && !now.contains("row 199") {
                gone = Some(Instant::now());
            }
            if now.contains("a new, empty session")
                && !now.contains("row 199")
                && now.contains("scripted/")
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "/clear never showed"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        clears.push(start.elapsed());
        repaints.push(gone.map_or(Duration::ZERO, |g| g.elapsed()));
        std::thread::sleep(Duration::from_millis(300));
    }
    resizes.sort();
    clears.sort();
    repaints.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "tui: 200x60 /clear: old screen gone to the new session's whole first frame median {:.2} ms, max {:.2} ms",
        ms(percentile(&repaints, 0.5)),
        ms(percentile(&repaints, 1.0)),
    );
    println!(
        "tui: 200x60 full screen: resize to new frame median {:.2} ms, p99 {:.2} ms ({} resizes); /clear to the next session's clean screen median {:.2} ms, max {:.2} ms ({} clears)",
        ms(percentile(&resizes, 0.5)),
        ms(percentile(&resizes, 0.99)),
        resizes.len(),
        ms(percentile(&clears, 0.5)),
        ms(percentile(&clears, 1.0)),
        clears.len()
    );
}

fn main() {
    let only = std::env::var("STUD_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "keys" {
        key_to_screen();
    }
    if only.is_empty() || only == "stream" {
        stream_100k();
    }
    if only.is_empty() || only == "redraw" {
        redraw_200x60();
    }
}
