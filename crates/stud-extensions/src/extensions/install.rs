//! `stud ext install`: fetch (folder, `.tar.gz`, or URL, hashed while it
//! streams), read only its manifest and the component's digest, ask for
//! consent to what it may do, then unpack into a temporary folder inside
//! the scope (with entry and size limits counted as written), check it is
//! what was shown, validate the component (contract range, imports,
//! compile), move it into the content-addressed store and record it in the
//! scope's lockfile. Any failure, a "no" included, leaves everything as it
//! was: the temporary folder is removed.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::consent::describe;
use super::lockfile::{Granted, LockEntry, LockError, Lockfile};
use super::scope::Scope;
use crate::contract::HOST_CONTRACT;
use crate::digest::Sha256Digest;
use crate::manifest::{Limits, MAX_MANIFEST_BYTES, Manifest, parse_manifest};
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
    #[error(transparent)]
    Signature(#[from] super::signing::SigningError),
    #[error("{0}")]
    SignerChanged(Box<SignerChange>),
    #[error(
        "{from}: its extension.toml takes the id `{id}`, which is reserved for the bundled extension of that name; nothing was installed. Give it an id of its own"
    )]
    ReservedId { id: String, from: String },
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
    /// Whose signatures count and what is required.
    pub signatures: Signatures,
    /// The index it is installed from by name (recorded in the lockfile).
    pub origin: Option<super::lockfile::IndexOrigin>,
    /// The id and version the source must hold (what an index listed):
    /// an index entry cannot slip in another extension, such as one that
    /// replaces a bundled tool.
    pub expect: Option<(String, String)>,
    /// `--allow-signer-change`: take a version whose signer is not the
    /// one pinned for the installed extension.
    pub allow_signer_change: bool,
}

/// What install checks signatures against (from the global settings).
#[derive(Debug, Clone, Default)]
pub struct Signatures {
    pub publishers: Vec<super::signing::TrustedPublisher>,
    pub policy: super::signing::SignaturePolicy,
    /// The `.minisig` to check (default: `<archive>.minisig` beside an
    /// archive source, when there is one).
    pub file: Option<PathBuf>,
    /// A signature already read (an index's `.minisig`), and where from.
    pub inline: Option<(PathBuf, String)>,
}

/// The signature text of `source`, and the file it was read from.
fn signature_of(
    source: &Source,
    opts: &Signatures,
) -> Result<Option<(PathBuf, String)>, InstallError> {
    if let Some(inline) = &opts.inline {
        return Ok(Some(inline.clone()));
    }
    let path = match (&opts.file, source) {
        (Some(p), _) => p.clone(),
        (None, Source::Archive(a)) => {
            let beside = super::signing::signature_path(a);
            if !beside.is_file() {
                return Ok(None);
            }
            beside
        }
        (None, _) => return Ok(None),
    };
    let text = std::fs::read_to_string(&path).map_err(io("read", &path))?;
    Ok(Some((path, text)))
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

    /// Whether a person answers (a terminal): a question no `--yes` may
    /// answer (a changed signer) is asked only then.
    fn interactive(&self) -> bool {
        false
    }
}

/// An installed extension's signer is pinned in the lockfile: a new
/// version signed by another publisher's key, or by none, is taken only
/// when the person says so at a terminal or the command line says
/// `--allow-signer-change` (`--yes` does not: it consents to what an
/// extension may do, not to who it comes from). Gaining a signer is no
/// change.
fn signer_kept(
    prev: &LockEntry,
    signed: &super::signing::Signed,
    (id, version): (&str, &str),
    opts: &InstallOptions,
    consent: &mut dyn Consent,
) -> Result<(), InstallError> {
    let Some(was) = prev.signer_key() else {
        return Ok(());
    };
    if signed.signer_key() == Some(was.as_str()) || opts.allow_signer_change {
        return Ok(());
    }
    let change = SignerChange {
        id: id.to_string(),
        from: prev.version.clone(),
        to: version.to_string(),
        was: prev
            .publisher
            .clone()
            .unwrap_or_else(|| format!("key {was}")),
        now: signed.describe(),
    };
    if !consent.interactive() {
        return Err(InstallError::SignerChanged(Box::new(change)));
    }
    let question = format!(
        "{}
Accept the new signer for `{id}`? (it replaces the pinned one)
",
        change.what()
    );
    if consent.ask(&question) {
        Ok(())
    } else {
        Err(InstallError::Declined {
            id: id.to_string(),
            version: version.to_string(),
        })
    }
}

/// Who signed the installed version and who signs the new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerChange {
    pub id: String,
    pub from: String,
    pub to: String,
    /// The pinned publisher (`Ada (key ...)`).
    pub was: String,
    /// What the new version's signature says (`Signed::describe`).
    pub now: String,
}

impl SignerChange {
    fn what(&self) -> String {
        format!(
            "`{}` {} is signed by {}, and {} is {}: the signer pinned in extensions.lock would change",
            self.id, self.from, self.was, self.to, self.now
        )
    }
}

impl std::fmt::Display for SignerChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; nothing was installed. A new signer is accepted only by a person at a terminal, or with --allow-signer-change (not with --yes) when you know why it changed",
            self.what()
        )
    }
}

pub async fn install(
    source: &Source,
    opts: &InstallOptions,
    runtime: &Arc<Runtime>,
    consent: &mut dyn Consent,
) -> Result<Report, InstallError> {
    // Nothing is unpacked, compiled or stored before the user said yes:
    // first only the manifest (and the component's digest) is read.
    let archive = match source {
        Source::Folder(dir) => crate_archive(dir)?,
        Source::Archive(path) => {
            let bytes = std::fs::read(path).map_err(io("read", path))?;
            check_sha(&Sha256Digest::of(&bytes), opts.expected_sha256.as_deref())?;
            Some(bytes)
        }
        Source::Url(url) => {
            let (bytes, digest) = download(url).await?;
            check_sha(&digest, opts.expected_sha256.as_deref())?;
            Some(bytes)
        }
    };
    let peeked = match (source, &archive) {
        (_, Some(bytes)) => peek_archive(bytes)?,
        (Source::Folder(dir), None) => peek_folder(dir)?,
        (_, None) => return Err(InstallError::Invalid("no archive was read".into())),
    };
    let manifest = peeked.manifest.clone();
    let id = manifest.id.to_string();
    let version = manifest.version.to_string();
    // Who published it, checked before anything is shown or unpacked: a
    // signature that does not match, or that vouches for another release
    // than the archive holds, refuses the install outright.
    let shown_file = PathBuf::from(source.describe());
    let archive_bytes = archive.as_deref().unwrap_or_default();
    let signed = super::signing::check(
        archive_bytes,
        &shown_file,
        &super::signing::Statement::of(archive_bytes, &id, &version),
        signature_of(source, &opts.signatures)?
            .as_ref()
            .map(|(p, t)| (p.as_path(), t.as_str())),
        &opts.signatures.publishers,
        opts.signatures.policy,
    )?;
    if let Some((want_id, want_version)) = &opts.expect
        && (want_id != &id || want_version != &version)
    {
        return Err(InstallError::Invalid(format!(
            "{} is listed as `{want_id}` {want_version} but holds `{id}` {version}; nothing was installed",
            source.describe()
        )));
    }
    if crate::bundled::is_bundled_id(&id) {
        return Err(InstallError::ReservedId {
            id,
            from: source.describe(),
        });
    }
    let manifest_digest = Sha256Digest::of(&peeked.manifest_bytes);
    let component = peeked.component.clone();

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
    if let Some(prev) = &previous {
        signer_kept(prev, &signed, (&id, &version), opts, consent)?;
    }
    let limits = describe_limits(&manifest);
    let question = match &previous {
        None => Some(format!(
            "Install `{id}` {version} ({kind}, {signed}) into the {scope} scope? It may:\n{}{}\n",
            bullet(&capabilities),
            limits_text(&limits),
            kind = manifest.kind,
            signed = signed.describe(),
            scope = opts.scope
        )),
        Some(prev) => {
            let more = prev.granted.missing(&manifest.capabilities);
            (!more.is_empty()).then(|| {
                format!(
                    "`{id}` {version} asks for more than version {} was granted. It also wants to:\n{}{}\n",
                    prev.version,
                    bullet(&more),
                    limits_text(&limits)
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

    // Now unpack (with limits) into a staging folder that is removed on
    // any failure, and check it holds exactly what was shown.
    std::fs::create_dir_all(&opts.root).map_err(io("create", &opts.root))?;
    let staging = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&opts.root)
        .map_err(io("create a temporary folder in", &opts.root))?;
    match (source, &archive) {
        (_, Some(bytes)) => unpack(bytes, staging.path())?,
        (Source::Folder(dir), None) => copy_folder(dir, staging.path(), &mut Budget::default())?,
        (_, None) => return Err(InstallError::Invalid("no archive was read".into())),
    }
    let folder = manifest_folder(staging.path())?;
    let staged_manifest = read_limited(&folder.join("extension.toml"), MAX_MANIFEST_BYTES as u64)?;
    let component_path = folder.join(&manifest.component);
    let component_bytes = std::fs::read(&component_path).map_err(io("read", &component_path))?;
    if staged_manifest != peeked.manifest_bytes || Sha256Digest::of(&component_bytes) != component {
        return Err(InstallError::Invalid(format!(
            "`{id}` changed while it was being installed (its manifest or component is not what was shown); nothing was installed"
        )));
    }
    // Verify and compile before anything is recorded: a bad component
    // fails here and changes nothing.
    let rt = runtime.clone();
    let (m, b, p) = (manifest.clone(), component_bytes, component_path.clone());
    tokio::task::spawn_blocking(move || rt.precompile(&m, &b, &p))
        .await
        .map_err(|e| InstallError::Invalid(format!("compiling panicked: {e}")))??;

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
            publisher: match &signed {
                super::signing::Signed::By { publisher, key_id } => {
                    Some(format!("{publisher} (key {key_id})"))
                }
                _ => None,
            },
            signer_key: signed.signer_key().map(str::to_string),
            index: opts.origin.clone(),
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

/// A crate folder is installed as what `stud ext pack` makes of it: the
/// manifest, the built component (where `stud ext build` or cargo put it)
/// and its README, not the crate's sources and `target/`. Install never
/// builds: that would run the folder's build scripts, which is code.
/// `None`: install the folder as it is.
fn crate_archive(dir: &Path) -> Result<Option<Vec<u8>>, InstallError> {
    let folder = manifest_folder(dir)?;
    let Ok(_) = super::pack::read_manifest(&folder) else {
        // `peek_folder` says what is wrong with it.
        return Ok(None);
    };
    if !folder.join("Cargo.toml").is_file() {
        return Ok(None);
    }
    super::pack::pack(&folder)
        .map(|p| Some(p.bytes))
        .map_err(|e| InstallError::Invalid(e.to_string()))
}

/// What the consent question is about, read without unpacking anything.
struct Peeked {
    manifest_bytes: Vec<u8>,
    manifest: Manifest,
    component: Sha256Digest,
}

fn parse_peeked(bytes: Vec<u8>, shown: &Path) -> Result<Manifest, InstallError> {
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| InstallError::Invalid(format!("{} is not UTF-8 text", shown.display())))?;
    parse_manifest(text, shown, &HOST_CONTRACT).map_err(|e| InstallError::Invalid(e.to_string()))
}

/// The manifest and component digest of a folder source.
fn peek_folder(dir: &Path) -> Result<Peeked, InstallError> {
    let folder = manifest_folder(dir)?;
    let manifest_path = folder.join("extension.toml");
    let manifest_bytes = read_limited(&manifest_path, MAX_MANIFEST_BYTES as u64)?;
    let manifest = parse_peeked(manifest_bytes.clone(), &manifest_path)?;
    let component_path = folder.join(&manifest.component);
    let bytes = std::fs::read(&component_path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => InstallError::Invalid(format!(
            "extension `{}`: its component {} is missing; build it first (for a Rust crate: `cargo build --release --target wasm32-wasip2`) or fix `component` in extension.toml",
            manifest.id,
            component_path.display()
        )),
        _ => InstallError::Io {
            what: "read",
            path: component_path.clone(),
            source,
        },
    })?;
    Ok(Peeked {
        manifest_bytes,
        manifest,
        component: Sha256Digest::of(&bytes),
    })
}

/// The id and version of the extension an archive holds (what a
/// signature of it states), read without unpacking it.
pub fn archive_release(bytes: &[u8]) -> Result<(String, String), InstallError> {
    let peeked = peek_archive(bytes)?;
    Ok((
        peeked.manifest.id.to_string(),
        peeked.manifest.version.to_string(),
    ))
}

/// The manifest and component digest of an archive, read from its entries
/// in memory (at the top, or in its single top folder).
fn peek_archive(bytes: &[u8]) -> Result<Peeked, InstallError> {
    let bad = |m: String| InstallError::Invalid(format!("the archive {m}"));
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut budget = Budget::default();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive
        .entries()
        .map_err(|e| bad(format!("cannot be read: {e}")))?
    {
        let mut entry = entry.map_err(|e| bad(format!("cannot be read: {e}")))?;
        let path = checked_entry_path(&entry)?;
        budget.entry(&path)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = path.file_name().map(|n| n.to_os_string());
        let depth = path.components().count();
        // Keep what might be the manifest or a component (a `.wasm`).
        let wanted = depth <= 2
            && (name.as_deref() == Some(std::ffi::OsStr::new("extension.toml"))
                || path.extension().is_some_and(|e| e == "wasm"));
        if wanted {
            let mut kept: Vec<u8> = Vec::new();
            copy_limited(&mut entry, &mut kept, &mut budget, &path)?;
            files.push((path, kept));
        } else {
            copy_limited(&mut entry, &mut std::io::sink(), &mut budget, &path)?;
        }
    }
    let manifest_at = files
        .iter()
        .filter(|(p, _)| p.file_name() == Some(std::ffi::OsStr::new("extension.toml")))
        .map(|(p, _)| p.clone())
        .min_by_key(|p| p.components().count())
        .ok_or_else(|| {
            InstallError::Invalid(
                "no extension.toml at the top of the archive (or in its single top folder)".into(),
            )
        })?;
    let folder = manifest_at
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let take = |p: &Path| files.iter().find(|(f, _)| f == p).map(|(_, b)| b.clone());
    let manifest_bytes = take(&manifest_at).unwrap_or_default();
    let manifest = parse_peeked(manifest_bytes.clone(), &manifest_at)?;
    let component_at = folder.join(&manifest.component);
    let component = take(&component_at).ok_or_else(|| {
        InstallError::Invalid(format!(
            "extension `{}`: the archive has no {} (the `component` its extension.toml names)",
            manifest.id,
            component_at.display()
        ))
    })?;
    Ok(Peeked {
        manifest_bytes,
        manifest,
        component: Sha256Digest::of(&component),
    })
}

/// `[limits]` above the defaults, in plain words.
fn describe_limits(manifest: &Manifest) -> Vec<String> {
    let default = Limits::default_for(manifest.kind);
    let mut out = Vec::new();
    if manifest.limits.memory_mib > default.memory_mib {
        out.push(format!(
            "use up to {} MiB of memory (the default is {} MiB)",
            manifest.limits.memory_mib, default.memory_mib
        ));
    }
    if manifest.limits.timeout_ms > default.timeout_ms {
        out.push(format!(
            "run up to {} per call (the default is {})",
            human_ms(manifest.limits.timeout_ms),
            human_ms(default.timeout_ms)
        ));
    }
    out
}

fn limits_text(limits: &[String]) -> String {
    if limits.is_empty() {
        String::new()
    } else {
        format!("\n{}", bullet(limits))
    }
}

fn human_ms(ms: u32) -> String {
    if ms >= 60_000 && ms.is_multiple_of(60_000) {
        format!("{} min", ms / 60_000)
    } else if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
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

/// Most entries an extension folder or archive may hold.
pub const MAX_ENTRIES: usize = 10_000;

/// What unpacking may still write: entries and bytes, counted as they are
/// really written (a tar header's size is only a claim).
struct Budget {
    entries: usize,
    bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            entries: MAX_ENTRIES,
            bytes: MAX_ARCHIVE_BYTES,
        }
    }
}

impl Budget {
    fn entry(&mut self, path: &Path) -> Result<(), InstallError> {
        if self.entries == 0 {
            return Err(InstallError::Invalid(format!(
                "the extension has more than {MAX_ENTRIES} files and folders (at `{}`); nothing was installed",
                path.display()
            )));
        }
        self.entries -= 1;
        Ok(())
    }
}

/// Copy `from` into `to`, stopping once the budget's bytes are spent.
fn copy_limited(
    from: &mut dyn std::io::Read,
    to: &mut dyn std::io::Write,
    budget: &mut Budget,
    path: &Path,
) -> Result<u64, InstallError> {
    let mut limited = std::io::Read::take(from, budget.bytes + 1);
    let copied = std::io::copy(&mut limited, to)
        .map_err(|e| InstallError::Invalid(format!("cannot unpack `{}`: {e}", path.display())))?;
    if copied > budget.bytes {
        return Err(InstallError::Invalid(format!(
            "the extension unpacks to more than {MAX_ARCHIVE_BYTES} bytes (at `{}`); nothing was installed",
            path.display()
        )));
    }
    budget.bytes -= copied;
    Ok(copied)
}

/// Copy regular files and folders; links are refused (what is installed
/// must be what was checked).
fn copy_folder(from: &Path, to: &Path, budget: &mut Budget) -> Result<(), InstallError> {
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
            budget.entry(&path)?;
            std::fs::create_dir(&dest).map_err(io("create", &dest))?;
            copy_folder(&path, &dest, budget)?;
        } else if kind.is_file() {
            budget.entry(&path)?;
            let mut src = std::fs::File::open(&path).map_err(io("read", &path))?;
            let mut out = std::fs::File::create_new(&dest).map_err(io("create", &dest))?;
            copy_limited(&mut src, &mut out, budget, &path)?;
        }
    }
    Ok(())
}

/// An entry's path, refused when it is absolute or climbs out with `..`,
/// and its type refused unless a file or folder.
fn checked_entry_path<R: std::io::Read>(
    entry: &tar::Entry<'_, R>,
) -> Result<PathBuf, InstallError> {
    let bad = |m: String| InstallError::Invalid(format!("the archive {m}"));
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
    // `./a` and `a` are one path.
    Ok(path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect())
}

/// Unpack a `.tar.gz` refusing links, device files, absolute paths and
/// `..`, stopping at [`MAX_ENTRIES`] entries or [`MAX_ARCHIVE_BYTES`]
/// really written. Files are created new: an entry cannot replace another.
fn unpack(bytes: &[u8], to: &Path) -> Result<(), InstallError> {
    let bad = |m: String| InstallError::Invalid(format!("the archive {m}"));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut budget = Budget::default();
    for entry in archive
        .entries()
        .map_err(|e| bad(format!("cannot be read: {e}")))?
    {
        let mut entry = entry.map_err(|e| bad(format!("cannot be read: {e}")))?;
        let path = checked_entry_path(&entry)?;
        budget.entry(&path)?;
        if path.as_os_str().is_empty() {
            continue;
        }
        let dest = to.join(&path);
        if entry.header().entry_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io("create", &dest))?;
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io("create", parent))?;
        }
        let mut out = std::fs::File::create_new(&dest)
            .map_err(|e| bad(format!("cannot be unpacked at `{}`: {e}", path.display())))?;
        copy_limited(&mut entry, &mut out, &mut budget, &path)?;
    }
    Ok(())
}

/// A file read whole, refused past `limit` bytes.
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, InstallError> {
    let file = std::fs::File::open(path).map_err(io("read", path))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
        .map_err(io("read", path))?;
    if bytes.len() as u64 > limit {
        return Err(InstallError::Invalid(format!(
            "{} is over {limit} bytes; manifests are small",
            path.display()
        )));
    }
    Ok(bytes)
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
pub(super) async fn download(url: &str) -> Result<(Vec<u8>, Sha256Digest), InstallError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_above_the_defaults_are_named_in_plain_words() {
        let text = "id = \"big\"\nname = \"Big\"\nversion = \"1.0.0\"\nkind = \"hook\"\ncontract = \"^0.1\"\n\n[limits]\nmemory-mib = 2048\ntimeout-ms = 60000\n\n[[hooks]]\nslot = \"render.post\"\nkind = \"observer\"\n";
        let m = parse_manifest(text, Path::new("extension.toml"), &HOST_CONTRACT).unwrap();
        assert_eq!(
            describe_limits(&m),
            [
                "use up to 2048 MiB of memory (the default is 256 MiB)",
                "run up to 1 min per call (the default is 2 s)"
            ]
        );
        let small = text.replace(
            "memory-mib = 2048\ntimeout-ms = 60000\n",
            "memory-mib = 64\n",
        );
        let m = parse_manifest(&small, Path::new("extension.toml"), &HOST_CONTRACT).unwrap();
        assert!(describe_limits(&m).is_empty());
    }
}
