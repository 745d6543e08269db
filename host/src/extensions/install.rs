//! `stud ext install`: fetch (folder, `.tar.gz`, or URL, hashed while it
//! streams), unpack into a temporary folder inside the scope, validate the
//! manifest and the component (contract range, imports, compile), ask for
//! consent to what it may do, move it into the content-addressed store and
//! record it in the scope's lockfile. Any failure leaves everything as it
//! was.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::consent::describe;
use super::discovery::from_folder;
use super::lockfile::{Granted, LockEntry, LockError, Lockfile};
use super::scope::Scope;
use crate::digest::Sha256Digest;
use crate::runtime::{LoadError, Runtime};

/// Largest archive download and largest unpacked size.
pub const MAX_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}")]
    Source(String),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("installation of `{id}` {version} declined; nothing was changed")]
    Declined { id: String, version: String },
    #[error("download of {url} failed: {message}")]
    Download { url: String, message: String },
    #[error("the archive's sha256 is {actual}, not the expected {expected}; nothing was installed")]
    DigestMismatch { expected: String, actual: String },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> InstallError + 'a {
    move |source| InstallError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Where an extension comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Folder(PathBuf),
    Archive(PathBuf),
    Url(String),
}

impl Source {
    pub fn parse(text: &str) -> Result<Self, InstallError> {
        if text.starts_with("http://") {
            let url = reqwest::Url::parse(text)
                .map_err(|e| InstallError::Source(format!("`{text}` is not a URL: {e}")))?;
            if !is_loopback_url(&url) {
                return Err(InstallError::Source(format!(
                    "`{text}`: plain http is only allowed from this machine (127.0.0.1); use https://"
                )));
            }
            return Ok(Source::Url(text.to_string()));
        }
        if text.starts_with("https://") {
            return Ok(Source::Url(text.to_string()));
        }
        let path = PathBuf::from(text);
        if path.is_dir() {
            Ok(Source::Folder(path))
        } else if path.is_file() && (text.ends_with(".tar.gz") || text.ends_with(".tgz")) {
            Ok(Source::Archive(path))
        } else {
            Err(InstallError::Source(format!(
                "`{text}` is not a folder with extension.toml, a .tar.gz archive or an https:// URL"
            )))
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::Folder(p) | Source::Archive(p) => p
                .canonicalize()
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Source::Url(u) => u.clone(),
        }
    }
}

pub struct InstallOptions {
    pub scope: Scope,
    /// The scope's folder (`~/.stud` or `<project>/.stud`).
    pub root: PathBuf,
    /// Consent given on the command line.
    pub yes: bool,
    /// The archive must have this sha256 (URL and archive sources).
    pub expected_sha256: Option<String>,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Installed,
    Updated { from: String },
    Unchanged,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub id: String,
    pub version: String,
    pub outcome: Outcome,
    pub path: PathBuf,
    pub component: Sha256Digest,
    pub capabilities: Vec<String>,
}

/// The prompt shown before installing; answers yes or no.
pub trait Consent {
    fn ask(&mut self, question: &str) -> bool;
}

pub async fn install(
    source: &Source,
    opts: &InstallOptions,
    runtime: &Arc<Runtime>,
    consent: &mut dyn Consent,
) -> Result<Report, InstallError> {
    std::fs::create_dir_all(&opts.root).map_err(io("create", &opts.root))?;
    let staging = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&opts.root)
        .map_err(io("create a temporary folder in", &opts.root))?;
    match source {
        Source::Folder(dir) => copy_folder(dir, staging.path())?,
        Source::Archive(path) => {
            let bytes = std::fs::read(path).map_err(io("read", path))?;
            check_sha(&Sha256Digest::of(&bytes), opts.expected_sha256.as_deref())?;
            unpack(&bytes, staging.path())?;
        }
        Source::Url(url) => {
            let (bytes, digest) = download(url).await?;
            check_sha(&digest, opts.expected_sha256.as_deref())?;
            unpack(&bytes, staging.path())?;
        }
    }
    let folder = manifest_folder(staging.path())?;
    let found =
        from_folder(&folder, opts.scope).map_err(|e| InstallError::Invalid(e.to_string()))?;
    let manifest = found.manifest;
    let id = manifest.id.to_string();
    let version = manifest.version.to_string();
    let manifest_bytes =
        std::fs::read(folder.join("extension.toml")).map_err(io("read", &folder))?;
    let component_path = folder.join(&manifest.component);
    let component_bytes = std::fs::read(&component_path).map_err(io("read", &component_path))?;
    let component = Sha256Digest::of(&component_bytes);
    let manifest_digest = Sha256Digest::of(&manifest_bytes);
    // Verify and compile before anything is recorded: a bad component
    // fails here and changes nothing.
    let rt = runtime.clone();
    let (m, b, p) = (manifest.clone(), component_bytes, component_path.clone());
    tokio::task::spawn_blocking(move || rt.precompile(&m, &b, &p))
        .await
        .map_err(|e| InstallError::Invalid(format!("compiling panicked: {e}")))??;

    let mut lock = Lockfile::load(&opts.root)?;
    let previous = lock.extensions.get(&id).cloned();
    let capabilities = describe(&manifest.capabilities);
    if let Some(prev) = &previous
        && prev.component == component.to_string()
        && prev.manifest == manifest_digest.to_string()
    {
        return Ok(Report {
            id,
            version,
            outcome: Outcome::Unchanged,
            path: opts.root.join(&prev.path),
            component,
            capabilities,
        });
    }
    let question = match &previous {
        None => Some(format!(
            "Install `{id}` {version} ({kind}) into the {scope} scope? It may:\n{}\n",
            bullet(&capabilities),
            kind = manifest.kind,
            scope = opts.scope
        )),
        Some(prev) => {
            let more = prev.granted.missing(&manifest.capabilities);
            (!more.is_empty()).then(|| {
                format!(
                    "`{id}` {version} asks for more than version {} was granted. It also wants to:\n{}\n",
                    prev.version,
                    bullet(&more)
                )
            })
        }
    };
    if let Some(q) = question
        && !opts.yes
        && !consent.ask(&q)
    {
        return Err(InstallError::Declined { id, version });
    }

    let key = Sha256Digest::of(format!("{component}\n{manifest_digest}").as_bytes());
    let rel = format!("store/{}", key.hex());
    let target = opts.root.join(&rel);
    if !target.is_dir() {
        let store = opts.root.join("store");
        std::fs::create_dir_all(&store).map_err(io("create", &store))?;
        std::fs::rename(&folder, &target).map_err(io("move into", &target))?;
    }
    lock.extensions.insert(
        id.clone(),
        LockEntry {
            version: version.clone(),
            kind: manifest.kind.to_string(),
            source: source.describe(),
            path: rel.clone(),
            component: component.to_string(),
            manifest: manifest_digest.to_string(),
            installed_at: now_secs(),
            granted: Granted::of(&manifest.capabilities),
        },
    );
    lock.save(&opts.root)?;
    if let Some(prev) = &previous
        && prev.path != rel
        && !lock.extensions.values().any(|e| e.path == prev.path)
    {
        let _ = std::fs::remove_dir_all(opts.root.join(&prev.path));
    }
    Ok(Report {
        id,
        version,
        outcome: match previous {
            None => Outcome::Installed,
            Some(prev) => Outcome::Updated { from: prev.version },
        },
        path: target,
        component,
        capabilities,
    })
}

/// Drop `id` from the scope's lockfile and delete its stored files when
/// nothing else uses them. `false` if it was not installed there.
pub fn remove(root: &Path, id: &str) -> Result<bool, InstallError> {
    let mut lock = Lockfile::load(root)?;
    let Some(entry) = lock.extensions.remove(id) else {
        return Ok(false);
    };
    lock.save(root)?;
    if !lock.extensions.values().any(|e| e.path == entry.path) {
        let _ = std::fs::remove_dir_all(root.join(&entry.path));
    }
    Ok(true)
}

fn bullet(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("  - {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn check_sha(actual: &Sha256Digest, expected: Option<&str>) -> Result<(), InstallError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    match Sha256Digest::parse(expected) {
        Some(e) if &e == actual => Ok(()),
        _ => Err(InstallError::DigestMismatch {
            expected: expected.to_string(),
            actual: actual.to_string(),
        }),
    }
}

/// Copy regular files and folders; links are refused (what is installed
/// must be what was checked).
fn copy_folder(from: &Path, to: &Path) -> Result<(), InstallError> {
    let entries = std::fs::read_dir(from).map_err(io("read", from))?;
    for entry in entries {
        let entry = entry.map_err(io("read", from))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io("read", &path))?;
        let dest = to.join(entry.file_name());
        if kind.is_symlink() {
            return Err(InstallError::Invalid(format!(
                "{} is a symbolic link; an extension folder may only hold files and folders",
                path.display()
            )));
        } else if kind.is_dir() {
            if entry.file_name() == "target" || entry.file_name() == ".git" {
                continue;
            }
            std::fs::create_dir(&dest).map_err(io("create", &dest))?;
            copy_folder(&path, &dest)?;
        } else if kind.is_file() {
            std::fs::copy(&path, &dest).map_err(io("copy", &path))?;
        }
    }
    Ok(())
}

/// Unpack a `.tar.gz` refusing links, device files, absolute paths and
/// `..`, and stopping at [`MAX_ARCHIVE_BYTES`] unpacked.
fn unpack(bytes: &[u8], to: &Path) -> Result<(), InstallError> {
    let bad = |m: String| InstallError::Invalid(format!("the archive {m}"));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut total: u64 = 0;
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("cannot be read: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("cannot be read: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| bad(format!("has a bad path: {e}")))?
            .into_owned();
        if path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(bad(format!(
                "has an entry `{}` outside its own folder",
                path.display()
            )));
        }
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(bad(format!(
                "has `{}`, which is a link or special file; only files and folders are allowed",
                path.display()
            )));
        }
        total += entry.size();
        if total > MAX_ARCHIVE_BYTES {
            return Err(bad(format!(
                "unpacks to more than {MAX_ARCHIVE_BYTES} bytes"
            )));
        }
        let ok = entry
            .unpack_in(to)
            .map_err(|e| bad(format!("cannot be unpacked at `{}`: {e}", path.display())))?;
        if !ok {
            return Err(bad(format!(
                "has an entry `{}` outside its own folder",
                path.display()
            )));
        }
    }
    Ok(())
}

/// `extension.toml` at the top, or in the one folder at the top.
fn manifest_folder(root: &Path) -> Result<PathBuf, InstallError> {
    if root.join("extension.toml").is_file() {
        return Ok(root.to_path_buf());
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(io("read", root))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    match dirs.as_slice() {
        [one] if one.join("extension.toml").is_file() => Ok(one.clone()),
        _ => Err(InstallError::Invalid(
            "no extension.toml at the top of the source (or in its single top folder)".into(),
        )),
    }
}

/// `http://127.0.0.1`, `http://localhost`, `http://[::1]`.
fn is_loopback_url(url: &reqwest::Url) -> bool {
    matches!(
        url.host_str(),
        Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
    )
}

/// GET `url` into memory, hashing as it streams, up to the size limit.
async fn download(url: &str) -> Result<(Vec<u8>, Sha256Digest), InstallError> {
    let fail = |message: String| InstallError::Download {
        url: url.to_string(),
        message,
    };
    // Redirects may not downgrade to plain http (except on loopback).
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= 10 {
            attempt.error("too many redirects")
        } else if attempt.url().scheme() == "https" || is_loopback_url(attempt.url()) {
            attempt.follow()
        } else {
            attempt.error("a redirect to plain http is refused; use https")
        }
    });
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(redirects)
        .connect_timeout(std::time::Duration::from_secs(30))
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| fail(e.without_url().to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("HTTP {}", response.status())));
    }
    let mut hasher = Sha256::new();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| fail(e.without_url().to_string()))?
    {
        hasher.update(&chunk);
        body.write_all(&chunk).map_err(|e| fail(e.to_string()))?;
        if body.len() as u64 > MAX_ARCHIVE_BYTES {
            return Err(fail(format!("larger than {MAX_ARCHIVE_BYTES} bytes")));
        }
    }
    Ok((body, Sha256Digest::finish(hasher)))
}
