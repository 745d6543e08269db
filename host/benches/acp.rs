//! ACP benchmark (a bench binary; numbers are printed, not asserted): the
//! `stud` binary as an editor runs it (`stud acp`, JSON-RPC lines on its
//! stdio), the scripted provider answering at once.
//! - prompt to first `session/update`: the latency an editor sees;
//! - per-chunk overhead: a 20,000-chunk answer against a one-chunk one,
//!   per `agent_message_chunk` notification.
//!
//! Run: `cargo bench -p stud --bench acp`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    next_id: u64,
    session: String,
    _home: tempfile::TempDir,
    _project: tempfile::TempDir,
}

impl Agent {
    fn start(text: &str, chunk: usize) -> Agent {
        let home = tempfile::tempdir().expect("tmp");
        let project = tempfile::tempdir().expect("tmp");
        let script = json!({"repeat": true, "chunk": chunk, "turns": [{"text": text}]});
        std::fs::write(project.path().join("script.json"), script.to_string()).expect("script");
        let settings = json!({
            "active": {"provider": "scripted"},
            "providers": {"scripted": {"script-file": "script.json"}},
            "sessionStores": {"filesystem": {"fsync": false}}
        });
        std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");
        let mut child = Command::new(env!("CARGO_BIN_EXE_stud"))
            .arg("acp")
            .env("STUD_HOME", home.path())
            .current_dir(project.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start stud acp");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut agent = Agent {
            child,
            stdin,
            lines,
            next_id: 1,
            session: String::new(),
            _home: home,
            _project: project,
        };
        agent.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
            |_| {},
        );
        let cwd = agent._project.path().display().to_string();
        let r = agent.call("session/new", json!({"cwd": cwd, "mcpServers": []}), |_| {});
        agent.session = r["sessionId"].as_str().expect("session id").to_string();
        agent
    }

    /// Send a request; `on_update` sees each notification before the
    /// response, which is returned.
    fn call(&mut self, method: &str, params: Value, mut on_update: impl FnMut(&Value)) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
        for line in self.lines.by_ref() {
            let v: Value = serde_json::from_str(&line.expect("read")).expect("json line");
            if v["id"] == id {
                return v["result"].clone();
            }
            if v["method"] == "session/update" {
                on_update(&v);
            }
        }
        panic!("stud acp ended");
    }

    /// One prompt: (time to the first update, time to the answer, updates).
    fn prompt(&mut self) -> (Duration, Duration, usize) {
        let params = json!({"sessionId": self.session, "prompt": [{"type": "text", "text": "hi"}]});
        let t = Instant::now();
        let mut first = None;
        let mut n = 0;
        self.call("session/prompt", params, |_| {
            first.get_or_insert_with(|| t.elapsed());
            n += 1;
        });
        (first.unwrap_or_default(), t.elapsed(), n)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut short = Agent::start("ok", 64);
    for _ in 0..20 {
        short.prompt();
    }
    let (mut first, mut whole) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let (f, w, _) = short.prompt();
        first.push(f);
        whole.push(w);
    }
    println!(
        "prompt to first session/update: p50 {:?}, p90 {:?}; prompt to stop: p50 {:?}",
        median(first.clone()),
        {
            first.sort();
            first[first.len() * 9 / 10]
        },
        median(whole.clone())
    );
    let chunks = 20_000;
    let mut long = Agent::start(&"x".repeat(chunks), 1);
    long.prompt();
    let mut long_runs = Vec::new();
    let mut seen = 0;
    for _ in 0..5 {
        let (_, w, n) = long.prompt();
        long_runs.push(w);
        seen = n;
    }
    let per = median(long_runs.clone()).saturating_sub(median(whole)) / chunks as u32;
    println!(
        "a {chunks}-chunk answer: p50 {:?} ({seen} updates); per chunk beyond a one-chunk answer: {per:?}",
        median(long_runs)
    );
}
