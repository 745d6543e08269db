//! Compiled-code cache on disk, keyed by the component's sha256 and the
//! engine's compatibility hash. A second start deserializes instead of
//! compiling; a changed component has another key.
//!
//! An entry is native code that runs unchecked once deserialized, so each
//! is authenticated: a MAC under a per-user key (`<stud home>/cache.key`,
//! 32 random bytes created exclusively with mode 0600) over the entry's
//! name and bytes sits next to it (`.mac`). A planted or corrupted entry
//! does not verify: it is deleted and the component is compiled again.
//! Without a usable key there is no disk cache (every load compiles):
//! caching only ever costs or saves time.
//!
//! The MAC is BLAKE3 in its keyed mode: every warm start checks every
//! megabyte of code it runs (about 4 MB for a headless session), and
//! BLAKE3 does that several times faster than the HMAC-SHA256 used
//! before, even against the CPU's SHA instructions (docs/benchmarks.md).
//! Entries tagged by that HMAC (`.hmac`) do not verify, and are replaced.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::mapped::MappedFile;
use super::publish::{self, Publishing};
use crate::atomic_write::write_atomic;
use crate::digest::Sha256Digest;

/// Where a loaded component's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Compiled now (and stored, when the cache is on).
    Compiled,
    /// Deserialized from the cache.
    Cached,
    /// Built into the binary: a bundled extension compiled when stud was
    /// built (`stud-native`).
    Native,
}

impl CodeSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CodeSource::Compiled => "compiled",
            CodeSource::Cached => "cache",
            CodeSource::Native => "native",
        }
    }
}

/// Counters, so tests can prove what happened without timing.
#[derive(Debug, Default)]
pub struct CacheStats {
    pub compiled: AtomicU64,
    pub cache_hits: AtomicU64,
    pub discarded: AtomicU64,
    /// Bundled extensions whose native code was used.
    pub native: AtomicU64,
    /// Native code not used because its bytes were not the recorded ones
    /// (then compiled like any other).
    pub native_refused: AtomicU64,
}

pub use crate::paths::CacheLocation;

/// One embedded blob's outcome, decided once per runtime.
type NativeCell = Arc<OnceLock<Native>>;

/// What a runtime found for one embedded blob.
enum Native {
    /// Run where it lies, shared by this runtime's extensions.
    InPlace(Component),
    /// Checked, but each load copies it: this engine cannot run code in
    /// place, another engine in the process does (see `publish::claim`),
    /// or wasmtime would not run it where it lies.
    Copied(&'static [u8]),
    /// Missing, built for another engine, or altered.
    Unusable,
}

/// A component from a copy of checked embedded `code`.
fn copy(engine: &Engine, code: &'static [u8]) -> Option<Component> {
    // SAFETY: the bytes are part of this binary, are what
    // `Engine::precompile_component` made at build time from the component
    // whose sha256 the caller has verified, under an engine with this
    // engine's key, and still have the digest recorded then
    // (`stud_native::lookup` checked all three).
    unsafe { Component::deserialize(engine, code) }.ok()
}

pub struct CompileCache {
    dir: Option<PathBuf>,
    key: Option<CacheKey>,
    engine_key: String,
    publishing: Publishing,
    /// What each embedded blob gave, by the digest of its source: checked
    /// once per runtime, and run in place by one runtime in the process
    /// (see `publish::claim`).
    natives: Mutex<HashMap<Sha256Digest, NativeCell>>,
    pub stats: CacheStats,
}

/// Why the disk cache is off.
#[derive(Debug, thiserror::Error)]
pub enum CacheKeyError {
    #[error("cannot read or create the compile cache key {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the compile cache key {path} is readable or writable by others (or not yours); delete it and stud makes a new one"
    )]
    Exposed { path: PathBuf },
    #[error("the compile cache key {path} is not 32 bytes; delete it and stud makes a new one")]
    Malformed { path: PathBuf },
}

impl CompileCache {
    /// `location = None` disables the disk cache (every load compiles), as
    /// does a key that cannot be read or created (the error says why).
    pub fn new(
        engine: &Engine,
        publishing: Publishing,
        location: Option<CacheLocation>,
    ) -> (Self, Option<CacheKeyError>) {
        let (dir, key, problem) = match location {
            None => (None, None, None),
            Some(loc) => match load_or_create_key(&loc.key_file) {
                Ok(key) => (Some(loc.dir), Some(key), None),
                Err(e) => (None, None, Some(e)),
            },
        };
        let cache = CompileCache {
            dir,
            key,
            engine_key: engine_key(engine),
            publishing,
            natives: Mutex::default(),
            stats: CacheStats::default(),
        };
        (cache, problem)
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The folder and the key, when the disk cache is on.
    pub(crate) fn keyed(&self) -> Option<(&Path, &CacheKey)> {
        Some((self.dir.as_deref()?, self.key.as_ref()?))
    }

    /// The engine's key (see `stud_engine::engine_key`).
    pub fn engine_key(&self) -> &str {
        &self.engine_key
    }

    /// The native code built into the binary for a bundled component whose
    /// bytes the caller has verified (`digest`), when there is usable code
    /// for this engine.
    pub fn native(&self, engine: &Engine, digest: &Sha256Digest) -> Option<Component> {
        let component = match self
            .blob(digest)
            .get_or_init(|| self.publish(engine, digest))
        {
            Native::InPlace(component) => Some(component.clone()),
            Native::Copied(code) => copy(engine, code),
            Native::Unusable => None,
        }?;
        self.stats.native.fetch_add(1, Ordering::Relaxed);
        Some(component)
    }

    /// The cell of one blob. The map is locked only to find it; the cell
    /// makes a second caller for the same blob wait for, then share, the
    /// first one's outcome, while other blobs load in parallel.
    fn blob(&self, digest: &Sha256Digest) -> NativeCell {
        self.natives
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(digest.clone())
            .or_default()
            .clone()
    }

    /// Check the blob for `digest`, then run it where it lies if this
    /// engine may and no one in the process has claimed it.
    fn publish(&self, engine: &Engine, digest: &Sha256Digest) -> Native {
        let Some(code) = self.checked_code(digest) else {
            return Native::Unusable;
        };
        if self.publishing != Publishing::InPlace || !publish::claim(code) {
            return Native::Copied(code);
        }
        // SAFETY: as for `deserialize` in `copy`, and: the bytes are
        // `'static` and never written (read-only pages of the binary),
        // page-aligned (`stud_native::ALIGN`), claimed by no other
        // deserialization in the process (`publish::claim`), and this
        // engine's publisher can publish them (`Publishing::InPlace`
        // comes only from `publish::configure`).
        match unsafe { Component::deserialize_raw(engine, NonNull::from(code)) } {
            Ok(component) => Native::InPlace(component),
            Err(_) => Native::Copied(code),
        }
    }

    /// The embedded code for `digest`, if it is there for this engine and
    /// still has the digest recorded at build time.
    fn checked_code(&self, digest: &Sha256Digest) -> Option<&'static [u8]> {
        match stud_native::lookup(&digest.hex(), &self.engine_key) {
            Ok(code) => Some(code),
            Err(stud_native::Miss::Altered) => {
                self.stats.native_refused.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    /// Compiled code for `bytes`, whose digest the caller has verified.
    pub fn load(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &Sha256Digest,
    ) -> wasmtime::Result<(Component, CodeSource)> {
        let Some(dir) = &self.dir else {
            self.stats.compiled.fetch_add(1, Ordering::Relaxed);
            return Ok((Component::new(engine, bytes)?, CodeSource::Compiled));
        };
        let Some(key) = &self.key else {
            self.stats.compiled.fetch_add(1, Ordering::Relaxed);
            return Ok((Component::new(engine, bytes)?, CodeSource::Compiled));
        };
        let name = format!("{}-{}", digest.hex(), self.engine_key);
        let base = dir.join(&name);
        let code_path = base.with_extension("cwasm");
        let mac_path = base.with_extension(MAC_EXTENSION);
        if let Some(component) = self.read_entry(engine, key, &name, &code_path, &mac_path) {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((component, CodeSource::Cached));
        }
        self.stats.compiled.fetch_add(1, Ordering::Relaxed);
        let component = Component::new(engine, bytes)?;
        // A cache that cannot be written only costs speed.
        let _ = write_entry(key, &name, &code_path, &mac_path, &component);
        Ok((component, CodeSource::Compiled))
    }

    /// A small authenticated entry kept beside the code (what a component
    /// said about itself, such as a tool's spec), by name; `None` when
    /// there is none or it does not verify (it is then deleted).
    pub fn read_note(&self, name: &str) -> Option<Vec<u8>> {
        let (dir, key) = (self.dir.as_ref()?, self.key.as_ref()?);
        let path = dir.join(name);
        let mac_path = note_mac_path(&path);
        let bytes = std::fs::read(&path).ok()?;
        if authentic(key, name, &bytes, &mac_path) {
            return Some(bytes);
        }
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&mac_path);
        None
    }

    /// Keep a note (see [`read_note`](Self::read_note)); a cache that
    /// cannot be written only costs time.
    pub fn write_note(&self, name: &str, bytes: &[u8]) {
        let (Some(dir), Some(key)) = (&self.dir, &self.key) else {
            return;
        };
        let path = dir.join(name);
        let tag = entry_mac(key, name, bytes).to_hex();
        let _ = write_atomic(&path, bytes)
            .and_then(|()| write_atomic(&note_mac_path(&path), tag.as_bytes()));
    }

    fn read_entry(
        &self,
        engine: &Engine,
        key: &CacheKey,
        name: &str,
        code_path: &Path,
        mac_path: &Path,
    ) -> Option<Component> {
        // An entry that cannot be mapped (or that others may write) is
        // treated as one that does not verify.
        if let Some(code) = MappedFile::open(code_path)
            && authentic(key, name, code.bytes(), mac_path)
        {
            // SAFETY: the bytes carry our own MAC over their name (component
            // digest and engine compatibility hash) and content, so they are
            // what `Component::serialize` of a compatible engine wrote here;
            // only we can change them (`MappedFile::open`), and they are
            // copied before `code` is unmapped.
            if let Ok(c) = unsafe { Component::deserialize(engine, code.bytes()) } {
                return Some(c);
            }
        }
        self.stats.discarded.fetch_add(1, Ordering::Relaxed);
        let _ = std::fs::remove_file(code_path);
        let _ = std::fs::remove_file(mac_path);
        // The earlier format's tag, if this entry had one.
        let _ = std::fs::remove_file(code_path.with_extension("hmac"));
        None
    }
}

/// The user's 32-byte cache key.
pub(crate) type CacheKey = [u8; blake3::KEY_LEN];

/// The file name extension of a tag.
const MAC_EXTENSION: &str = "mac";

/// Whether `bytes` carry our tag (kept in `mac_path`) for `name`.
fn authentic(key: &CacheKey, name: &str, bytes: &[u8], mac_path: &Path) -> bool {
    let recorded = std::fs::read_to_string(mac_path).unwrap_or_default();
    // `Hash`'s equality is constant-time.
    blake3::Hash::from_hex(recorded.trim()).is_ok_and(|tag| entry_mac(key, name, bytes) == tag)
}

fn note_mac_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(MAC_EXTENSION);
    PathBuf::from(name)
}

/// The MAC of an entry: its name (digest and engine) and its bytes.
fn entry_mac(key: &CacheKey, name: &str, code: &[u8]) -> blake3::Hash {
    let mut mac = blake3::Hasher::new_keyed(key);
    mac.update(name.as_bytes());
    mac.update(&[0]);
    mac.update(code);
    mac.finalize()
}

fn write_entry(
    key: &CacheKey,
    name: &str,
    code_path: &Path,
    mac_path: &Path,
    component: &Component,
) -> std::io::Result<()> {
    let code = component.serialize().map_err(std::io::Error::other)?;
    let tag = entry_mac(key, name, &code).to_hex();
    write_atomic(code_path, &code)?;
    write_atomic(mac_path, tag.as_bytes())
}

/// The user's cache key: read it, or create it (exclusively, 0600) when
/// there is none. One that others could read or write is refused.
fn load_or_create_key(path: &Path) -> Result<CacheKey, CacheKeyError> {
    let io = |source| CacheKeyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => {
            check_private(path)?;
            b
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key(path).map_err(io)?,
        Err(e) => return Err(io(e)),
    };
    CacheKey::try_from(bytes.as_slice()).map_err(|_| CacheKeyError::Malformed {
        path: path.to_path_buf(),
    })
}

fn create_key(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut f) => {
            f.write_all(&key)?;
            f.sync_all()?;
            Ok(key)
        }
        // Another stud made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read(path),
        Err(e) => Err(e),
    }
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), CacheKeyError> {
    let meta = std::fs::symlink_metadata(path).map_err(|source| CacheKeyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !super::mapped::mine_without(&meta, 0o077) {
        return Err(CacheKeyError::Exposed {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), CacheKeyError> {
    Ok(())
}

pub(crate) use stud_engine::engine_key;

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// A key others could read lets them forge entries: the cache is off.
    #[test]
    fn a_key_others_may_read_turns_the_cache_off() {
        let dir = tempfile::tempdir().unwrap();
        let location = CacheLocation {
            dir: dir.path().join("compiled"),
            key_file: dir.path().join("cache.key"),
        };
        let engine = Engine::default();
        let (cache, problem) = CompileCache::new(&engine, Publishing::Copy, Some(location.clone()));
        assert!(problem.is_none() && cache.dir().is_some());
        std::fs::set_permissions(&location.key_file, std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let (cache, problem) = CompileCache::new(&engine, Publishing::Copy, Some(location));
        assert!(matches!(problem, Some(CacheKeyError::Exposed { .. })));
        assert!(cache.dir().is_none());
    }
}
