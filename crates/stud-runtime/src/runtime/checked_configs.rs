//! Configs this binary has found valid, noted in the compile cache, so a
//! later start with the same binary, schema and config need not compile
//! the schema again: the process's first `jsonschema` compile (its
//! regexes, the CPU's features probed, its tables built) sat on the first
//! request's path, about 0.3 ms of every start with an extension's
//! settings (issue 42, docs/benchmarks.md).
//!
//! A note is an empty file whose name is a MAC, under the user's cache key
//! (`cache.rs`), over the binary's identity (its file's device, inode, size
//! and modification time: another build or an upgrade makes other names),
//! the schema and the config. Without the key no one can make a name that
//! counts. Closed world: a config without a note is validated as before,
//! an invalid one is never noted, and a note that cannot be looked up or
//! written only costs the compile.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::cache::CompileCache;

/// The folder of the notes, inside the cache folder.
const NOTES: &str = "checked-configs";

/// Where the note for one (schema, config) pair would be.
#[derive(Debug)]
pub struct ConfigNote(PathBuf);

impl ConfigNote {
    /// The note for `config` (JSON text) against `schema` (JSON text), when
    /// the cache is on and the binary's identity is known.
    pub fn of(cache: &CompileCache, schema: &str, config: &str) -> Option<Self> {
        let (dir, key) = cache.keyed()?;
        let mut mac = blake3::Hasher::new_keyed(key);
        for part in [NOTES, binary_identity()?, schema, config] {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part.as_bytes());
        }
        Some(ConfigNote(
            dir.join(NOTES).join(mac.finalize().to_hex().as_str()),
        ))
    }

    /// Whether the config was found valid by this binary before.
    pub fn found(&self) -> bool {
        std::fs::symlink_metadata(&self.0).is_ok_and(|m| m.is_file())
    }

    /// Note that the config is valid (best effort). Created exclusively:
    /// whatever is already at the name (a planted link) is left as it is,
    /// never followed, and only a plain file counts as a note.
    pub fn write(&self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.0);
    }
}

/// This binary's identity: its file's device, inode, size and modification
/// time, with the crate's version. `None` when the file cannot be looked
/// at (no notes then).
fn binary_identity() -> Option<&'static str> {
    static IDENTITY: OnceLock<Option<String>> = OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let meta = std::fs::metadata(running_binary()?).ok()?;
            let modified = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_nanos();
            Some(format!(
                "{}:{}:{}:{modified}",
                env!("CARGO_PKG_VERSION"),
                device_and_inode(&meta),
                meta.len(),
            ))
        })
        .as_deref()
}

/// The file this process runs. On Linux the kernel's link to it, which
/// names the running file even when another was put at its path since.
#[cfg(target_os = "linux")]
fn running_binary() -> Option<PathBuf> {
    Some(PathBuf::from("/proc/self/exe"))
}

#[cfg(not(target_os = "linux"))]
fn running_binary() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

#[cfg(unix)]
fn device_and_inode(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt as _;
    format!("{}:{}", meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn device_and_inode(_: &std::fs::Metadata) -> String {
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::cache::CacheLocation;
    use crate::runtime::publish::Publishing;
    use wasmtime::Engine;

    fn keyed_cache(home: &std::path::Path, key: &str) -> CompileCache {
        let location = CacheLocation {
            dir: home.join("compiled"),
            key_file: home.join(key),
        };
        CompileCache::new(&Engine::default(), Publishing::Copy, Some(location)).0
    }

    #[test]
    fn a_note_is_found_only_for_the_same_schema_config_and_key() {
        let home = tempfile::tempdir().unwrap();
        let cache = keyed_cache(home.path(), "cache.key");
        let note = |schema: &str, config: &str| ConfigNote::of(&cache, schema, config).unwrap();
        let schema = r#"{"type":"object"}"#;
        assert!(!note(schema, "{}").found(), "nothing noted yet");
        note(schema, "{}").write();
        assert!(note(schema, "{}").found());
        assert!(!note(schema, r#"{"a":1}"#).found(), "another config");
        assert!(!note(r#"{"type":"array"}"#, "{}").found(), "another schema");
        // The parts are length-prefixed: moving text between them is
        // another name.
        assert_ne!(note("ab", "c").0, note("a", "bc").0);
        let other = keyed_cache(home.path(), "other.key");
        assert!(
            !ConfigNote::of(&other, schema, "{}").unwrap().found(),
            "another key makes other names"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_a_notes_name_is_no_note_and_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let cache = keyed_cache(home.path(), "cache.key");
        let planted = ConfigNote::of(&cache, r#"{"type":"object"}"#, "{}").unwrap();
        std::fs::create_dir_all(planted.0.parent().unwrap()).unwrap();
        let target = home.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, &planted.0).unwrap();
        assert!(!planted.found());
        planted.write();
        assert!(!target.exists(), "the link was followed");
        assert!(!planted.found());
    }

    #[test]
    fn without_the_disk_cache_nothing_is_noted() {
        let off = CompileCache::new(&Engine::default(), Publishing::Copy, None).0;
        assert!(ConfigNote::of(&off, "{}", "{}").is_none());
    }

    #[test]
    fn the_identity_is_the_running_file() {
        let id = binary_identity().expect("this test binary's identity");
        let meta = std::fs::metadata(std::env::current_exe().unwrap()).unwrap();
        assert!(id.contains(&format!(":{}:", meta.len())), "{id}");
    }
}
