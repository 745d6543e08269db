//! A loopback HTTP/1.1 server for tests: it answers each request with the
//! next scripted reply, writing the body in pieces (flushed, with a short
//! pause) so the client sees chunk boundaries exactly where the test put
//! them, and records every request it received.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Byte offsets where the body is cut into separate writes.
    pub cuts: Vec<usize>,
    /// Close the connection after this many body bytes (a dropped stream).
    pub stop_after: Option<usize>,
    /// After this many body bytes, go silent for a minute (a stuck server).
    pub stall_after: Option<usize>,
    /// Wait this long before answering (a slow server).
    pub delay: Option<Duration>,
    /// Answer only once this file exists (at most 20 s, then 504): a
    /// reply that waits for something else in the test to have happened.
    pub once_exists: Option<std::path::PathBuf>,
}

impl Reply {
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: body.into(),
            cuts: Vec::new(),
            stop_after: None,
            stall_after: None,
            delay: None,
            once_exists: None,
        }
    }

    /// An SSE body cut every `every` bytes and also right inside the first
    /// multi-byte UTF-8 character (the awkward places).
    pub fn sse(body: &str, every: usize) -> Self {
        let mut cuts: Vec<usize> = (1..body.len()).filter(|i| i % every == 0).collect();
        if let Some((i, c)) = body.char_indices().find(|(_, c)| c.len_utf8() > 1) {
            cuts.push(i + 1);
            cuts.push(i + c.len_utf8() - 1);
        }
        cuts.sort_unstable();
        cuts.dedup();
        Reply::new(200, body.as_bytes().to_vec())
            .header("content-type", "text/event-stream")
            .cut_at(cuts)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn cut_at(mut self, cuts: Vec<usize>) -> Self {
        self.cuts = cuts;
        self
    }

    pub fn stop_after(mut self, bytes: usize) -> Self {
        self.stop_after = Some(bytes);
        self
    }

    pub fn stall_after(mut self, bytes: usize) -> Self {
        self.stall_after = Some(bytes);
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    pub fn once_exists(mut self, path: std::path::PathBuf) -> Self {
        self.once_exists = Some(path);
        self
    }
}

/// What the server received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request (head and body) had been read.
    pub at: std::time::Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl TestServer {
    /// Listen on 127.0.0.1 (any free port) and answer with `replies` in
    /// order; past the end, 500.
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let log = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                let queue = queue.clone();
                std::thread::spawn(move || serve(stream, &log, &queue));
            }
        });
        TestServer { addr, received }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The live list of requests (for a watcher thread).
    pub fn requests_handle(&self) -> Arc<Mutex<Vec<Received>>> {
        self.received.clone()
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Received>>, queue: &Mutex<VecDeque<Reply>>) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((n, v)) = h.trim_end().split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    log.lock().unwrap().push(Received {
        method,
        path,
        headers,
        body,
        at: std::time::Instant::now(),
    });
    let reply = queue
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::new(500, "no more scripted replies"));
    if let Some(d) = reply.delay {
        std::thread::sleep(d);
    }
    let mut reply = reply;
    if let Some(path) = &reply.once_exists {
        let mut waited = 0;
        while !path.exists() && waited < 1000 {
            std::thread::sleep(Duration::from_millis(20));
            waited += 1;
        }
        if !path.exists() {
            // What the test waited for never happened: say so, rather
            // than answer as if it had.
            reply = Reply::new(504, format!("waited 20 s for {}", path.display()));
        }
    }
    let mut out = stream;
    let mut head = format!("HTTP/1.1 {} Test\r\nconnection: close\r\n", reply.status);
    for (n, v) in &reply.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if reply.stop_after.is_none() && reply.cuts.is_empty() {
        head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    head.push_str("\r\n");
    if out.write_all(head.as_bytes()).is_err() {
        return;
    }
    let end = reply
        .stop_after
        .unwrap_or(reply.body.len())
        .min(reply.body.len());
    let mut start = 0;
    let mut cuts: Vec<usize> = reply.cuts.iter().copied().filter(|c| *c < end).collect();
    cuts.extend(reply.stall_after.filter(|s| *s < end));
    cuts.sort_unstable();
    cuts.push(end);
    for cut in cuts {
        if cut <= start {
            continue;
        }
        if out.write_all(&reply.body[start..cut]).is_err() || out.flush().is_err() {
            return;
        }
        start = cut;
        if reply.stall_after == Some(cut) {
            std::thread::sleep(Duration::from_secs(60));
        } else if cut < end {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let _ = out.shutdown(std::net::Shutdown::Both);
}

/// Serves the files of a folder by path (GET), read at request time so a
/// test can change them between requests; 404 for anything else. `down`
/// makes it drop every connection unanswered (an unreachable server).
pub struct StaticServer {
    pub addr: SocketAddr,
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl StaticServer {
    pub fn start(dir: &std::path::Path) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (root, off) = (dir.to_path_buf(), down.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if off.load(std::sync::atomic::Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let root = root.clone();
                std::thread::spawn(move || serve_file(stream, &root));
            }
        });
        StaticServer { addr, down }
    }

    /// `http://127.0.0.1:PORT/<path>`
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    pub fn down(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn serve_file(mut stream: TcpStream, root: &std::path::Path) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let rel = path.split('?').next().unwrap_or("").trim_start_matches('/');
    let file = (!rel.contains("..")).then(|| root.join(rel));
    let (status, body) = match file.and_then(|f| std::fs::read(f).ok()) {
        Some(bytes) => ("200 OK", bytes),
        None => ("404 Not Found", b"not found".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}
