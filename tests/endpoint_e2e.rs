//! A hostile model endpoint on loopback, end to end with the `stud` binary
//! and the bundled `openai-compatible` provider: a server that streams
//! without end (text, tool-call arguments, one endless SSE line), one that
//! accepts and never answers, one that trickles a byte now and then. Each
//! run ends in bounded time with a typed error, and memory stays bounded.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::Output;
use std::time::{Duration, Instant};

use common::StudEnv;
use serde_json::{Value, json};

const KEY: &str = "sk-test-endpoint-0123456789";

/// How the hostile server behaves after reading the request.
#[derive(Clone, Copy)]
enum Hostile {
    EndlessText,
    EndlessArguments,
    EndlessLine,
    NoHeaders,
    Trickle,
}

fn chunk(delta: Value) -> Vec<u8> {
    let ev = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    format!("data: {ev}\n\n").into_bytes()
}

fn serve(mut stream: TcpStream, how: Hostile) {
    let mut buf = [0u8; 65536];
    let _ = stream.read(&mut buf);
    let headers =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let started = Instant::now();
    // Never longer than a minute, whatever the client does.
    let alive = || started.elapsed() < Duration::from_secs(60);
    match how {
        Hostile::NoHeaders => {
            while alive() {
                std::thread::sleep(Duration::from_millis(50));
                if stream.write(&[]).is_err() {
                    return;
                }
            }
        }
        Hostile::Trickle => {
            if stream.write_all(headers).is_err() {
                return;
            }
            while alive() {
                std::thread::sleep(Duration::from_millis(100));
                if stream.write_all(b":\n").is_err() {
                    return;
                }
            }
        }
        Hostile::EndlessText | Hostile::EndlessArguments | Hostile::EndlessLine => {
            if stream.write_all(headers).is_err() {
                return;
            }
            let piece = match how {
                Hostile::EndlessText => chunk(json!({"content": "A".repeat(4000)})),
                Hostile::EndlessArguments => {
                    let start = chunk(
                        json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "list", "arguments": ""}}]}),
                    );
                    if stream.write_all(&start).is_err() {
                        return;
                    }
                    chunk(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": "A".repeat(4000)}}]}),
                    )
                }
                _ => {
                    if stream.write_all(b"data: ").is_err() {
                        return;
                    }
                    vec![b'A'; 4000]
                }
            };
            while alive() {
                if stream.write_all(&piece).is_err() {
                    return;
                }
            }
        }
    }
}

/// Start a hostile server on 127.0.0.1; its base URL.
fn hostile(how: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, how));
        }
    });
    format!("http://{addr}")
}

/// One finished run: what it printed, how long it took, and the peak
/// resident set of that `stud` process alone.
struct Run {
    out: Output,
    took: Duration,
    peak_rss_kib: i64,
}

/// Reap `child` with `wait4`, which reports the rusage of that one process.
/// `RUSAGE_CHILDREN` would not do: the e2e binary runs many tests at once,
/// and it reports the largest of every child any of them waited for.
fn reap(child: &std::process::Child) -> Option<(std::process::ExitStatus, i64)> {
    use std::os::unix::process::ExitStatusExt as _;
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let mut status = 0;
    // SAFETY: wait4 only writes the status and the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    assert!(got >= 0, "wait4: {}", std::io::Error::last_os_error());
    (got == pid).then(|| (std::process::ExitStatus::from_raw(status), usage.ru_maxrss))
}

fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// One headless turn against `url`; killed (and failed) after 60 s.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4 in `reap`, which Child cannot see"
)]
fn run_against(url: &str) -> Run {
    let env = StudEnv::new();
    env.settings(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": url}},
        "runtime": {
            "retries": {"maxRetries": 0},
            // 10 s in all: a trickle is still given up well inside the
            // test's bound, and an endless stream reaches the size caps
            // first even on a loaded CI machine (2.5 s was not always
            // enough there).
            "network": {"headerTimeoutMs": 700, "responseTimeoutMs": 10000, "maxResponseBytes": 4 << 20},
            "responseLimits": {"textBytes": 1 << 20, "toolArgumentBytes": 1 << 20}
        }
    }));
    let started = Instant::now();
    let mut child = env
        .command(&["run", "-p", "--yolo", "--output-format", "json", "hi"])
        .env("OPENAI_API_KEY", KEY)
        .spawn()
        .expect("start stud");
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let (status, peak_rss_kib) = loop {
        if let Some(done) = reap(&child) {
            break done;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stud did not end within 60 s against a hostile endpoint");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let out = Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    Run {
        out,
        took,
        peak_rss_kib,
    }
}

fn result(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("null")).unwrap_or(Value::Null)
}

#[test]
fn endless_streams_end_with_a_typed_error_and_bounded_memory() {
    for (how, code) in [
        (Hostile::EndlessText, "provider-response-too-large"),
        (Hostile::EndlessArguments, "provider-response-too-large"),
        (Hostile::EndlessLine, "provider-response-too-large"),
    ] {
        let Run {
            out, peak_rss_kib, ..
        } = run_against(&hostile(how));
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = result(&out);
        let got = r["error_code"].as_str().unwrap_or_default();
        assert!(got.ends_with("response-too-large"), "{code}: {r}");
        let message = r["error"].as_str().unwrap_or_default();
        assert!(message.contains("runtime."), "names the setting: {message}");
        // The caps are a few MiB; the process itself (wasmtime, the loaded
        // components) is most of this bound.
        assert!(
            peak_rss_kib < 400 * 1024,
            "{code}: peak RSS {peak_rss_kib} KiB"
        );
        eprintln!("hostile endpoint: stud peak RSS {peak_rss_kib} KiB");
    }
}

#[test]
fn a_server_that_never_answers_or_trickles_is_given_up() {
    let Run { out, took, .. } = run_against(&hostile(Hostile::NoHeaders));
    let r = result(&out);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or_default()
            .contains("headerTimeoutMs"),
        "{r}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");

    let Run { out, took, .. } = run_against(&hostile(Hostile::Trickle));
    let r = result(&out);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or_default()
            .contains("responseTimeoutMs"),
        "{r}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
}
