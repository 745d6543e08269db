//! `extensions.lock` (TOML, one per scope): what was installed, from
//! where, the digests of its component and manifest, and exactly what the
//! user granted. Loading refuses bytes that no longer match; installing a
//! version that asks for more than the grant asks the user again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::{Capabilities, FsAccess, Kind};

pub const LOCKFILE: &str = "extensions.lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid lockfile: {message}; fix it or reinstall the extensions")]
    Parse { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The capabilities the user agreed to, in a stable, diffable form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    /// `project:read`, `project:read-write`, `data:read-write`, ...
    #[serde(default)]
    pub filesystem: Vec<String>,
    #[serde(default)]
    pub network: Vec<String>,
    #[serde(default, rename = "user-hosts")]
    pub user_hosts: bool,
    #[serde(default)]
    pub exec: bool,
    #[serde(default)]
    pub secrets: Vec<String>,
}

impl Granted {
    pub fn of(caps: &Capabilities) -> Self {
        let mut g = Granted {
            filesystem: caps
                .filesystem
                .iter()
                .map(|f| format!("{}:{}", f.dir, f.access))
                .collect(),
            network: caps.network.iter().map(|p| p.to_string()).collect(),
            user_hosts: caps.user_hosts,
            exec: caps.exec,
            secrets: caps.secrets.clone(),
        };
        g.filesystem.sort();
        g.network.sort();
        g.secrets.sort();
        g
    }

    /// What `caps` asks for beyond this grant, in plain words (empty when
    /// the grant covers it).
    pub fn missing(&self, caps: &Capabilities) -> Vec<String> {
        let mut out = Vec::new();
        for f in &caps.filesystem {
            let covered = self.filesystem.iter().any(|g| {
                g == &format!("{}:{}", f.dir, f.access)
                    || (f.access == FsAccess::Read && g == &format!("{}:read-write", f.dir))
            });
            if !covered {
                out.push(super::consent::describe_fs(f));
            }
        }
        for p in &caps.network {
            if !self.network.contains(&p.to_string()) {
                out.push(format!("connect to {p}"));
            }
        }
        if caps.user_hosts && !self.user_hosts {
            out.push("connect to hosts you grant it in settings".into());
        }
        if caps.exec && !self.exec {
            out.push("run programs in the project folder".into());
        }
        for s in &caps.secrets {
            if !self.secrets.contains(s) {
                out.push(format!("read the secret {s}"));
            }
        }
        out
    }
}

/// One installed extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockEntry {
    pub version: String,
    pub kind: String,
    /// Where it was installed from (folder, archive or URL).
    pub source: String,
    /// The folder holding it, relative to the scope root
    /// (`store/<component hex>`).
    pub path: String,
    /// `sha256:<hex>` of the component.
    pub component: String,
    /// `sha256:<hex>` of `extension.toml`.
    pub manifest: String,
    /// Unix seconds.
    pub installed_at: u64,
    pub granted: Granted,
    /// The trusted publisher whose signature it carried, and the key id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The key id of that signature: the signer pinned for this
    /// extension. A new version signed by another key, or unsigned, is
    /// installed only when the person accepts the change
    /// (`install::signer_kept`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer_key: Option<String>,
    /// The index it was installed from by name, and the version range
    /// asked for (`stud ext update` stays inside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexOrigin>,
}

/// Where an extension installed by name came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexOrigin {
    /// The index's URL.
    pub url: String,
    /// The range asked for (`^1`), `*` when none was given.
    pub range: String,
}

impl LockEntry {
    pub fn kind(&self) -> Option<Kind> {
        self.kind.parse().ok()
    }

    /// The pinned signer's key id; for an entry written before it was
    /// recorded, the key named in `publisher` (`Ada (key 0123...)`).
    pub fn signer_key(&self) -> Option<String> {
        self.signer_key.clone().or_else(|| {
            let p = self.publisher.as_deref()?;
            let key = p.rsplit_once("(key ")?.1.strip_suffix(')')?;
            (!key.is_empty()).then(|| key.to_string())
        })
    }
}

/// The whole file; entries sorted by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lockfile {
    #[serde(default)]
    pub extensions: BTreeMap<String, LockEntry>,
}

impl Lockfile {
    /// Read `<root>/extensions.lock`; a missing file is empty.
    pub fn load(root: &Path) -> Result<Self, LockError> {
        let path = root.join(LOCKFILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lockfile::default()),
            Err(source) => return Err(LockError::Read { path, source }),
        };
        let lock: Lockfile = toml::from_str(&text).map_err(|e| LockError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        // Entries point into this scope's store only: a hand-edited path
        // must not make `remove` or discovery touch anything else.
        for (id, e) in &lock.extensions {
            let ok = e
                .path
                .strip_prefix("store/")
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            if !ok {
                return Err(LockError::Parse {
                    path,
                    message: format!("`{id}`: path `{}` is not `store/<sha256 hex>`", e.path),
                });
            }
        }
        Ok(lock)
    }

    /// Write atomically (temp file, fsync, rename).
    pub fn save(&self, root: &Path) -> Result<(), LockError> {
        let path = root.join(LOCKFILE);
        let write = |source| LockError::Write {
            path: path.clone(),
            source,
        };
        let text = format!(
            "# Written by `stud ext install`; edit with `stud ext install/remove`.\n{}",
            toml::to_string(self).map_err(|e| write(std::io::Error::other(e)))?
        );
        crate::atomic_write::write_atomic(&path, text.as_bytes()).map_err(write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{FsDir, FsRequest};

    #[test]
    fn round_trip_sorted_and_grant_growth() {
        let dir = tempfile::tempdir().unwrap();
        let mut caps = Capabilities {
            network: vec!["api.example.com".parse().unwrap()],
            ..Default::default()
        };
        let mut lock = Lockfile::default();
        for id in ["zeta", "alpha"] {
            lock.extensions.insert(
                id.into(),
                LockEntry {
                    version: "1.0.0".into(),
                    kind: "tool".into(),
                    source: "/src".into(),
                    path: format!("store/{}", "ab".repeat(32)),
                    component: "sha256:00".into(),
                    manifest: "sha256:11".into(),
                    installed_at: 1,
                    granted: Granted::of(&caps),
                    publisher: None,
                    signer_key: None,
                    index: Some(IndexOrigin {
                        url: "https://example.com/index.json".into(),
                        range: "^1".into(),
                    }),
                },
            );
        }
        lock.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCKFILE)).unwrap();
        assert!(
            text.find("alpha").unwrap() < text.find("zeta").unwrap(),
            "{text}"
        );
        assert_eq!(Lockfile::load(dir.path()).unwrap(), lock);

        let granted = Granted::of(&caps);
        assert!(granted.missing(&caps).is_empty());
        caps.network.push("evil.example".parse().unwrap());
        caps.filesystem.push(FsRequest {
            dir: FsDir::Project,
            access: FsAccess::Read,
        });
        let missing = granted.missing(&caps);
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(missing.iter().any(|m| m.contains("evil.example")));
    }

    #[test]
    fn the_pinned_signer_is_read_from_entries_written_before_it_was_recorded() {
        let text = format!(
            "[extensions.shout]\nversion = \"1.0.0\"\nkind = \"tool\"\nsource = \"x\"\npath = \"store/{}\"\ncomponent = \"sha256:00\"\nmanifest = \"sha256:11\"\ninstalled_at = 1\npublisher = \"Ada (key 0123ABCD)\"\n\n[extensions.shout.granted]\n",
            "ab".repeat(32)
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCKFILE), text).unwrap();
        let lock = Lockfile::load(dir.path()).unwrap();
        let mut entry = lock.extensions["shout"].clone();
        assert_eq!(entry.signer_key().as_deref(), Some("0123ABCD"));
        entry.signer_key = Some("FEED".into());
        assert_eq!(entry.signer_key().as_deref(), Some("FEED"));
        entry.signer_key = None;
        entry.publisher = None;
        assert_eq!(entry.signer_key(), None);
    }
}
