//! Real MCP servers from the npm registry, at pinned versions, installed
//! once per target dir (`.ci/run` installs them ahead; a fresh clone's
//! `cargo test` installs them here on first use). Tests talk to them on
//! stdio or on 127.0.0.1 only.

use std::path::PathBuf;
use std::process::Command;

/// The reference servers, pinned.
pub const EVERYTHING: (&str, &str) = ("@modelcontextprotocol/server-everything", "2026.8.31");
pub const FILESYSTEM: (&str, &str) = ("@modelcontextprotocol/server-filesystem", "2026.8.31");
/// The official ACP TypeScript SDK, for the editor in `tests/fixtures/acp`.
pub const ACP_SDK: (&str, &str) = ("@agentclientprotocol/sdk", "2.4.0");

/// Where the packages live: `<target>/tmp/npm` (what `.ci/run` fills).
pub fn prefix() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("npm")
}

/// The path of `bin` from the pinned packages, installing them first when
/// missing (under a lock, so parallel tests install once).
pub fn bin(bin: &str) -> PathBuf {
    let dir = prefix();
    let path = dir.join("node_modules").join(".bin").join(bin);
    let sdk = dir.join("node_modules").join(ACP_SDK.0);
    if path.exists() && sdk.exists() {
        return path;
    }
    std::fs::create_dir_all(&dir).expect("mkdir npm prefix");
    let lock = std::fs::File::create(dir.join(".install.lock")).expect("lock file");
    lock.lock().expect("lock the npm prefix");
    if !path.exists() || !sdk.exists() {
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args([EVERYTHING, FILESYSTEM, ACP_SDK].map(|(p, v)| format!("{p}@{v}")))
            .output()
            .expect("run npm (node and npm must be installed)");
        assert!(
            out.status.success(),
            "npm install of the MCP test servers and the ACP SDK failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(path.exists(), "npm installed no {}", path.display());
    path
}

/// `server-everything` over streamable HTTP on a free loopback port,
/// stopped when dropped.
pub struct EverythingHttp {
    child: std::process::Child,
    pub url: String,
}

impl EverythingHttp {
    pub fn start() -> Self {
        let bin = bin("mcp-server-everything");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(bin)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start server-everything over HTTP");
        let server = EverythingHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("server-everything did not listen on port {port} within 15 s");
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test server `tests/fixtures/mcp/dynamic.mjs`, placed beside the
/// installed packages so Node resolves the MCP SDK from there: the
/// command and arguments of a stdio entry.
pub fn dynamic_server() -> (String, Vec<String>) {
    static PLACED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dest = PLACED.get_or_init(|| place("mcp/dynamic.mjs", "dynamic.mjs"));
    ("node".into(), vec![dest.display().to_string()])
}

/// The MCP client `tests/fixtures/mcp/serve-client.mjs` (the official
/// TypeScript SDK's `Client`), placed beside the installed packages.
pub fn serve_client() -> PathBuf {
    static PLACED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PLACED
        .get_or_init(|| place("mcp/serve-client.mjs", "serve-client.mjs"))
        .clone()
}

/// The test editor `tests/fixtures/acp/client.mjs`, placed beside the
/// installed packages so Node resolves the ACP SDK from there.
pub fn acp_client() -> PathBuf {
    static PLACED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PLACED
        .get_or_init(|| place("acp/client.mjs", "acp-client.mjs"))
        .clone()
}

/// Copy fixture `from` to `name` beside the installed packages (once per
/// test process; the rename keeps other processes from ever seeing half a
/// file).
fn place(from: &str, name: &str) -> PathBuf {
    bin("mcp-server-everything");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(from);
    let dest = prefix().join(name);
    let tmp = prefix().join(format!("{name}.{}.tmp", std::process::id()));
    std::fs::copy(&src, &tmp).expect("copy the fixture");
    std::fs::rename(&tmp, &dest).expect("place the fixture");
    dest
}

/// `tests/fixtures/mcp/oauth-server.mjs`: an MCP server behind the
/// official TypeScript SDK's authorization server, on two loopback ports,
/// stopped when dropped. Its events (registration, authorization, token,
/// refresh, call) arrive as JSON lines.
pub struct OAuthServer {
    child: std::process::Child,
    pub url: String,
    pub issuer: String,
    events: std::sync::mpsc::Receiver<serde_json::Value>,
    seen: Vec<serde_json::Value>,
}

impl OAuthServer {
    /// Tokens last `token_seconds`.
    pub fn start(token_seconds: u64) -> Self {
        use std::io::BufRead as _;
        static PLACED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let script = PLACED.get_or_init(|| place("mcp/oauth-server.mjs", "oauth-server.mjs"));
        let mut child = Command::new("node")
            .arg(script)
            .env("TOKEN_SECONDS", token_seconds.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start the OAuth test server (node)");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        let first = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the OAuth test server did not start within 30 s");
        OAuthServer {
            child,
            url: first["mcp"].as_str().expect("mcp url").to_string(),
            issuer: first["issuer"].as_str().expect("issuer").to_string(),
            events: rx,
            seen: Vec::new(),
        }
    }

    /// Every event so far, in order.
    pub fn events(&mut self) -> &[serde_json::Value] {
        while let Ok(v) = self.events.try_recv() {
            self.seen.push(v);
        }
        &self.seen
    }

    /// How many events named `name` so far.
    pub fn count(&mut self, name: &str) -> usize {
        self.events().iter().filter(|e| e["event"] == name).count()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
