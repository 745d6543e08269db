//! Discovery: read every manifest, refuse bad ones with their full error,
//! resolve overrides by id, and say what was skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::scope::Scope;
use crate::bundled::{BUNDLED, BundledExtension};
use crate::contract::HOST_CONTRACT;
use crate::digest::Sha256Digest;
use crate::manifest::{ExtensionId, MAX_MANIFEST_BYTES, Manifest, ManifestError, parse_manifest};
use crate::paths::StudHome;

/// Where the component's bytes are.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    Embedded(&'static [u8]),
    File(PathBuf),
}

/// An extension that discovery accepted.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub scope: Scope,
    pub manifest: Manifest,
    /// The folder (or `bundled:<dir>` for embedded ones), for messages.
    pub location: PathBuf,
    pub component_path: PathBuf,
    pub source: ComponentSource,
    /// The digest the bytes must have, when one is on record.
    pub expected_digest: Option<Sha256Digest>,
    /// The lower scope whose extension of the same id this one replaces.
    pub overrides: Option<Scope>,
}

impl Discovered {
    pub fn read_bytes(&self) -> std::io::Result<Vec<u8>> {
        match &self.source {
            ComponentSource::Embedded(bytes) => Ok(bytes.to_vec()),
            ComponentSource::File(path) => std::fs::read(path),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryProblem {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is {size} bytes; manifests are at most {MAX_MANIFEST_BYTES} bytes")]
    TooLarge { path: PathBuf, size: u64 },
    #[error("extension `{id}`: its component {path} is missing; reinstall the extension")]
    ComponentMissing { id: ExtensionId, path: PathBuf },
    #[error(
        "extension `{id}` in {second} has the same id as the one in {first} (same {scope} scope); the first is used, rename or remove the other"
    )]
    Duplicate {
        id: ExtensionId,
        scope: Scope,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "project extensions in {path} were not read: project trust is not available in this version, so project scope is off"
    )]
    ProjectScopeSkipped { path: PathBuf },
}

#[derive(Debug, Default)]
pub struct Discovery {
    /// Effective extensions, ordered by (scope, kind, id).
    pub found: Vec<Discovered>,
    pub problems: Vec<DiscoveryProblem>,
}

impl Discovery {
    /// Bundled and global extensions; the project folder is only noted.
    pub fn scan(home: &StudHome, project_dir: Option<&Path>) -> Self {
        let mut d = Discovery::default();
        let mut by_id: BTreeMap<ExtensionId, Discovered> = BTreeMap::new();
        for b in BUNDLED {
            match bundled(b) {
                Ok(x) => {
                    by_id.insert(x.manifest.id.clone(), x);
                }
                Err(p) => d.problems.push(p),
            }
        }
        let mut global: BTreeMap<ExtensionId, Discovered> = BTreeMap::new();
        for dir in sorted_subdirs(&home.extensions_dir()) {
            match from_folder(&dir, Scope::Global) {
                Ok(x) => {
                    if let Some(first) = global.get(&x.manifest.id) {
                        d.problems.push(DiscoveryProblem::Duplicate {
                            id: x.manifest.id.clone(),
                            scope: Scope::Global,
                            first: first.location.clone(),
                            second: x.location.clone(),
                        });
                        continue;
                    }
                    global.insert(x.manifest.id.clone(), x);
                }
                Err(p) => d.problems.push(p),
            }
        }
        for (id, mut x) in global {
            x.overrides = by_id.get(&id).map(|lower| lower.scope);
            by_id.insert(id, x);
        }
        if let Some(project) = project_dir {
            let path = project.join(".stud").join("extensions");
            if path.is_dir() {
                d.problems
                    .push(DiscoveryProblem::ProjectScopeSkipped { path });
            }
        }
        d.found = by_id.into_values().collect();
        d.found.sort_by(|a, b| {
            (a.scope, a.manifest.kind.as_str(), a.manifest.id.as_str()).cmp(&(
                b.scope,
                b.manifest.kind.as_str(),
                b.manifest.id.as_str(),
            ))
        });
        d
    }
}

fn bundled(b: &'static BundledExtension) -> Result<Discovered, DiscoveryProblem> {
    let location = PathBuf::from(format!("bundled:{}", b.dir));
    let manifest = parse_manifest(b.manifest, &location.join("extension.toml"), &HOST_CONTRACT)?;
    Ok(Discovered {
        scope: Scope::Bundled,
        component_path: location.join(b.component_file),
        location,
        manifest,
        source: ComponentSource::Embedded(b.component),
        expected_digest: Sha256Digest::parse(b.sha256),
        overrides: None,
    })
}

/// One extension folder: `extension.toml` plus its component.
pub fn from_folder(dir: &Path, scope: Scope) -> Result<Discovered, DiscoveryProblem> {
    let manifest_path = dir.join("extension.toml");
    let meta = std::fs::metadata(&manifest_path).map_err(|source| DiscoveryProblem::Read {
        path: manifest_path.clone(),
        source,
    })?;
    if meta.len() > MAX_MANIFEST_BYTES as u64 {
        return Err(DiscoveryProblem::TooLarge {
            path: manifest_path,
            size: meta.len(),
        });
    }
    let text =
        std::fs::read_to_string(&manifest_path).map_err(|source| DiscoveryProblem::Read {
            path: manifest_path.clone(),
            source,
        })?;
    let manifest = parse_manifest(&text, &manifest_path, &HOST_CONTRACT)?;
    let component_path = dir.join(&manifest.component);
    if !component_path.is_file() {
        return Err(DiscoveryProblem::ComponentMissing {
            id: manifest.id.clone(),
            path: component_path,
        });
    }
    Ok(Discovered {
        scope,
        location: dir.to_path_buf(),
        source: ComponentSource::File(component_path.clone()),
        component_path,
        manifest,
        expected_digest: None,
        overrides: None,
    })
}

fn sorted_subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("extension.toml").is_file())
        .collect();
    // Raw byte order of the names, not locale order.
    dirs.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    dirs
}
