//! `stud` on a real pseudo-terminal, its screen read through a terminal
//! emulator (`vt100`), keys typed as a person types them.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use super::StudEnv;
use super::frames::Frames;

pub struct Term {
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<Frames>>,
    /// Every byte the program wrote, for what the emulator does not keep
    /// (the bell, OSC notifications and clipboard writes).
    raw: Arc<Mutex<Vec<u8>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Term {
    pub fn spawn(env: &StudEnv, args: &[&str], cols: u16, rows: u16) -> Term {
        Term::spawn_with(env, args, cols, rows, &[])
    }

    /// As [`Term::spawn`], with these variables set for the program.
    pub fn spawn_with(
        env: &StudEnv,
        args: &[&str],
        cols: u16,
        rows: u16,
        vars: &[(&str, &str)],
    ) -> Term {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_stud"));
        cmd.args(args);
        cmd.cwd(env.project.path());
        cmd.env("STUD_HOME", env.home.path());
        cmd.env("STUD_CACHE_DIR", super::shared_cache());
        cmd.env("TERM", "xterm-256color");
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "STUD_UI",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).expect("start stud on the pty");
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer = pty.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(Frames::new(rows, cols)));
        let feed = screen.clone();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let keep = raw.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                keep.lock().unwrap().extend_from_slice(&buf[..n]);
                feed.lock().unwrap().process(&buf[..n]);
            }
        });
        Term {
            master: pty.master,
            writer,
            screen,
            raw,
            child,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("type on the pty");
        self.writer.flush().expect("flush the pty");
    }

    /// Type `text` and press Enter.
    pub fn line(&mut self, text: &str) {
        self.send(text.as_bytes());
        std::thread::sleep(Duration::from_millis(50));
        self.send(b"\r");
    }

    /// Everything the program wrote so far, as bytes.
    pub fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Wait until the program has written `bytes` (anywhere in its output).
    pub fn wait_raw(&self, bytes: &[u8], timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.raw().windows(bytes.len()).any(|w| w == bytes) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// What a person sees, cell by cell: each row's symbols with a
    /// `«fg bg attrs»` mark where the colours or attributes change, up to
    /// its last cell that shows anything. A space written and a cell never
    /// written look the same, so they compare the same.
    pub fn visible(&self) -> String {
        let frames = self.screen.lock().unwrap();
        let screen = frames.screen();
        let (rows, cols) = screen.size();
        let mut out = Vec::new();
        for row in 0..rows {
            let cells: Vec<(String, String)> = (0..cols)
                .map(|col| match screen.cell(row, col) {
                    Some(c) => {
                        let symbol = if c.has_contents() {
                            c.contents().to_string()
                        } else if c.is_wide_continuation() {
                            String::new()
                        } else {
                            " ".to_string()
                        };
                        let style = format!(
                            "{:?} {:?} {}{}{}{}",
                            c.fgcolor(),
                            c.bgcolor(),
                            u8::from(c.bold()),
                            u8::from(c.italic()),
                            u8::from(c.underline()),
                            u8::from(c.inverse())
                        );
                        (symbol, style)
                    }
                    None => (" ".to_string(), String::new()),
                })
                .collect();
            let plain = format!(
                "{:?} {:?} 0000",
                vt100::Color::Default,
                vt100::Color::Default
            );
            let last = cells
                .iter()
                .rposition(|(sym, style)| {
                    sym.trim() != "" || (*style != plain && !style.is_empty())
                })
                .map_or(0, |i| i + 1);
            let mut line = String::new();
            let mut current = plain.clone();
            for (sym, style) in &cells[..last] {
                if !style.is_empty() && *style != current {
                    line.push_str(&format!("«{style}»"));
                    current = style.clone();
                }
                line.push_str(sym);
            }
            out.push(line);
        }
        out.join("\n")
    }

    /// The screen once it shows `needle` (or panic with what it shows).
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let now = self.contents();
            if now.contains(needle) {
                return now;
            }
            if start.elapsed() > timeout {
                panic!("the screen never showed {needle:?}; it shows:\n{now}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether the screen shows `needle` within `timeout`.
    pub fn shows_within(&self, needle: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.contents().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.screen.lock().unwrap().set_size(rows, cols);
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    /// Send a signal to the program, as `kill -<signal>` would.
    #[cfg(unix)]
    pub fn signal(&self, signal: i32) {
        let pid = self.child.process_id().expect("the program runs") as i32;
        // SAFETY: kill(2) on the pid of the child this test started.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill {pid}");
    }

    /// Whether the terminal is back on its main screen with the cursor
    /// shown (as the program found it).
    pub fn restored(&self) -> bool {
        let frames = self.screen.lock().unwrap();
        let screen = frames.parsed();
        !screen.alternate_screen() && !screen.hide_cursor()
    }

    /// Wait for the program to end (after it was asked to quit).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<u32> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status.exit_code());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
