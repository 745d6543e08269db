//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod frames;
pub mod http;
pub mod npm;
pub mod pg;
pub mod pty;
pub mod screen;
pub mod stream;
mod stud_env;

// Not every test file uses every helper.
#[allow(unused_imports)]
pub use stud_env::{StudEnv, merge, signal, walk};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use stud::contract::HOST_CONTRACT;
use stud::extensions::{Discovery, Registry};
use stud::manifest::{ExtensionId, parse_manifest};
use stud::paths::StudHome;
use stud::runtime::host_state::{DirGrant, PROJECT_GUEST_DIR};
use stud::runtime::services::{LogLevel, Services};
use stud::runtime::{Extension, LoadError, LoadSpec, Runtime, RuntimeOptions};

/// Records what extensions log and emit.
#[derive(Default)]
pub struct Recorder {
    pub logs: Mutex<Vec<(String, String)>>,
    pub events: Mutex<Vec<(String, String)>>,
}

impl Services for Recorder {
    fn log(&self, ext: &ExtensionId, level: LogLevel, message: &str) {
        self.logs
            .lock()
            .unwrap()
            .push((ext.to_string(), format!("{level:?}: {message}")));
    }

    fn emit(&self, _ext: &ExtensionId, name: &str, payload: &str) {
        self.events
            .lock()
            .unwrap()
            .push((name.to_string(), payload.to_string()));
    }
}

/// A runtime on the shared compile cache (the cache itself is tested in
/// cli_ext and runtime_faults with private ones).
pub fn runtime() -> Arc<Runtime> {
    Runtime::new(RuntimeOptions {
        cache: Some(stud::runtime::CacheLocation {
            dir: shared_cache(),
            key_file: shared_cache_key(),
        }),
        pooling: true,
    })
    .expect("runtime")
}

/// Load every bundled extension with `project` as the project directory.
pub async fn load_bundled(project: &Path, services: Arc<Recorder>) -> Vec<Arc<Extension>> {
    let home = tempfile::tempdir().expect("tempdir");
    load_bundled_at(home.path(), project, services).await
}

/// Like [`load_bundled`], with `home` as the stud home (extensions' data
/// folders are under it).
pub async fn load_bundled_at(
    home: &Path,
    project: &Path,
    services: Arc<Recorder>,
) -> Vec<Arc<Extension>> {
    load_bundled_into(runtime(), home, project, services).await
}

/// Like [`load_bundled_at`], into the runtime `runtime`.
pub async fn load_bundled_into(
    runtime: Arc<Runtime>,
    home: &Path,
    project: &Path,
    services: Arc<Recorder>,
) -> Vec<Arc<Extension>> {
    let registry = Arc::new(Registry {
        runtime,
        home: StudHome::at(home),
        project_dir: project.to_path_buf(),
        services,
        configs: Default::default(),
        fallback_configs: Default::default(),
        grants: Default::default(),
    });
    let discovery = Discovery::scan(&registry.home, &stud::extensions::ProjectScope::None);
    let report = registry.load_all(discovery.found).await;
    if let Some((id, e)) = report.failed.first() {
        panic!("bundled extension {id} failed to load: {e}");
    }
    report.loaded
}

pub fn find<'a>(exts: &'a [Arc<Extension>], id: &str) -> &'a Arc<Extension> {
    exts.iter()
        .find(|e| e.id().as_str() == id)
        .unwrap_or_else(|| panic!("no extension {id}"))
}

/// Folder of a test fixture crate (manifest next to it).
pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(stud_fixtures::FIXTURES_DIR).join(name)
}

/// The built component of a fixture or plugin.
pub fn wasm(file: &str) -> PathBuf {
    PathBuf::from(stud_fixtures::WASM_OUT).join(file)
}

/// A bundled extension's component, from the folder the binary embedded
/// it from (the prebuilt one, or `plugins/` built from source).
pub fn bundled_wasm(file: &str) -> PathBuf {
    PathBuf::from(stud_bundled::WASM_OUT).join(file)
}

/// Load a fixture by its folder name, optionally with another manifest text.
pub fn load_fixture(
    rt: &Arc<Runtime>,
    name: &str,
    manifest_override: Option<&str>,
    project: Option<&Path>,
) -> Result<Extension, LoadError> {
    rt.load(fixture_spec(name, manifest_override, project))
}

/// The load request for a fixture: its bytes from disk, no recorded
/// digest, no config, the project granted read-only when given.
pub fn fixture_spec(
    name: &str,
    manifest_override: Option<&str>,
    project: Option<&Path>,
) -> LoadSpec {
    let dir = fixture_dir(name);
    let text = match manifest_override {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(dir.join("extension.toml")).expect("fixture manifest"),
    };
    let manifest = parse_manifest(&text, &dir.join("extension.toml"), &HOST_CONTRACT)
        .expect("fixture manifest parses");
    let path = wasm(manifest.component.to_str().expect("utf-8 path"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let dirs = project
        .map(|p| {
            vec![DirGrant {
                host: p.to_path_buf(),
                guest: PROJECT_GUEST_DIR,
                access: stud::manifest::FsAccess::Read,
            }]
        })
        .unwrap_or_default();
    LoadSpec {
        manifest,
        scope: stud::extensions::Scope::Global,
        component_path: path,
        bytes: bytes.into(),
        expected_digest: None,
        config: None,
        dirs,
        network: Vec::new(),
        secrets: Default::default(),
        processes: Default::default(),
        net_limits: Default::default(),
        sockets: Vec::new(),
        protected: Default::default(),
        state: None,
        services: Arc::new(Recorder::default()),
    }
}

/// Copy a fixture (manifest + component) into `<home>/extensions/<name>`.
pub fn install_fixture(home: &Path, name: &str) -> PathBuf {
    let src = fixture_dir(name);
    let text = std::fs::read_to_string(src.join("extension.toml")).expect("fixture manifest");
    let manifest =
        parse_manifest(&text, &src.join("extension.toml"), &HOST_CONTRACT).expect("parses");
    let dest = home.join("extensions").join(name);
    std::fs::create_dir_all(&dest).expect("mkdir");
    std::fs::write(dest.join("extension.toml"), text).expect("write manifest");
    std::fs::copy(
        wasm(manifest.component.to_str().expect("utf-8")),
        dest.join(&manifest.component),
    )
    .expect("copy wasm");
    dest
}

/// A compile cache shared by the end-to-end tests, so each `stud` they start
/// does not compile every component again (the cache itself is tested in
/// cli_ext with a private one).
pub fn shared_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stud-compile-cache")
}

/// Put the key that authenticates the shared cache's entries into `home`
/// (each stud home otherwise makes its own, and entries written under one
/// key do not verify under another).
pub fn share_cache_key(home: &Path) {
    let shared = shared_cache_key();
    std::fs::create_dir_all(home).expect("mkdir home");
    std::fs::copy(&shared, home.join("cache.key")).expect("copy the shared cache key");
}

/// The key file of the shared cache, made on first use.
pub fn shared_cache_key() -> PathBuf {
    use std::io::Write as _;
    let shared = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stud-cache.key");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    if let Ok(mut f) = options.open(&shared) {
        // Any 32 bytes that stay the same for this target dir will do.
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        let key: Vec<u8> = seed.bytes().cycle().take(32).collect();
        f.write_all(&key).expect("write the shared cache key");
    }
    // Wait out a concurrent writer.
    for _ in 0..100 {
        if std::fs::metadata(&shared).map(|m| m.len()).unwrap_or(0) == 32 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    shared
}

/// Every bundled slash command.
pub const BUNDLED_COMMANDS: [&str; 18] = [
    "/help",
    "/tools",
    "/model",
    "/provider",
    "/mode",
    "/trust",
    "/network-policy",
    "/health",
    "/reload",
    "/compact",
    "/clear",
    "/cost",
    "/sessions",
    "/resume",
    "/save-and-close",
    "/exit",
    "/sm",
    "/mcp",
];

/// A scripted tool call: `{"name", "arguments"}`.
pub fn call(name: &str, args: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"name": name, "arguments": args})
}

/// A project holding `a.txt` whose scripted model calls `read` on it, then
/// answers "done".
pub fn reads_then_answers() -> StudEnv {
    let env = StudEnv::new();
    env.script(
        serde_json::json!([
            {"text": "", "tool_calls": [call("read", serde_json::json!({"path": "a.txt"}))]},
            {"text": "done"}
        ]),
        serde_json::json!({}),
    );
    env.file("a.txt", "alpha\n");
    env
}

/// A wasm custom section: the component stays valid and behaves the
/// same, but its bytes (and digest) are not the ones pinned.
pub fn custom_section(name: &str, payload: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    let mut out = vec![0u8];
    leb(body.len(), &mut out);
    out.extend(body);
    out
}

/// A recorded provider stream from `tests/streams/`.
pub fn recorded_stream(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/streams")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace's root folder (beside `host/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// What `cargo ARGS` prints, run in the workspace root with the cargo
/// running the tests (or panic with its error output).
pub fn cargo_stdout(args: &[&str]) -> Vec<u8> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
