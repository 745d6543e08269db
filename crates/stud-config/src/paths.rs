//! Where stud keeps its files. One root (`STUD_HOME`, else `~/.stud`) so
//! tests and users can move everything with one variable.

use std::path::{Path, PathBuf};

use crate::manifest::ExtensionId;

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("cannot find your home directory: set HOME or STUD_HOME")]
    NoHome,
}

/// The global stud directory.
#[derive(Debug, Clone)]
pub struct StudHome {
    root: PathBuf,
}

/// The person's home folder (`HOME`), where other agents keep their
/// files (`~/.claude`, `~/.agents`); `None` when it is not set.
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

impl StudHome {
    /// `STUD_HOME` if set and not empty, else `$HOME/.stud`.
    pub fn resolve() -> Result<Self, PathError> {
        if let Some(dir) = std::env::var_os("STUD_HOME").filter(|v| !v.is_empty()) {
            return Ok(StudHome {
                root: PathBuf::from(dir),
            });
        }
        let home = std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .ok_or(PathError::NoHome)?;
        Ok(StudHome {
            root: PathBuf::from(home).join(".stud"),
        })
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        StudHome { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Global settings.
    pub fn settings_file(&self) -> PathBuf {
        self.root.join("settings.json")
    }

    /// Global extensions, one folder each.
    pub fn extensions_dir(&self) -> PathBuf {
        self.root.join("extensions")
    }

    /// Compiled components, keyed by source digest and engine.
    /// `STUD_CACHE_DIR` moves it (it holds nothing but derived data, so
    /// several homes can share one).
    pub fn compile_cache_dir(&self) -> PathBuf {
        match std::env::var_os("STUD_CACHE_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => self.root.join("cache").join("compiled"),
        }
    }

    /// Where `stud ext new` unpacks the SDK kit (one folder per contract
    /// version). `STUD_SDK_DIR` moves it: the kit is derived from the
    /// binary, and homes that share one folder share cargo's build of the
    /// SDK too (a crate's path dependency is part of its identity, so each
    /// kit folder is compiled afresh).
    pub fn sdk_kits_dir(&self) -> PathBuf {
        match std::env::var_os("STUD_SDK_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => self.root.join("sdk"),
        }
    }

    /// The compile cache and the key that authenticates its entries (the
    /// key stays in the home even when `STUD_CACHE_DIR` moves the cache).
    pub fn compile_cache(&self) -> CacheLocation {
        CacheLocation {
            dir: self.compile_cache_dir(),
            key_file: self.root.join("cache.key"),
        }
    }

    /// An extension's private data folder (the `data` filesystem grant).
    pub fn data_dir(&self, id: &ExtensionId) -> PathBuf {
        self.root.join("data").join(id.as_str())
    }
}

/// Where compiled code is kept, and the file holding the key that
/// authenticates it (the user's own, in the stud home; the cache folder may
/// be shared or elsewhere, see `STUD_CACHE_DIR`).
#[derive(Debug, Clone)]
pub struct CacheLocation {
    pub dir: PathBuf,
    pub key_file: PathBuf,
}
