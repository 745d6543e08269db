//! Discovery: read every manifest, refuse bad ones with their full error,
//! resolve overrides by id, and say what was skipped.
//!
//! Bundled ids are reserved: an extension of another scope that takes one
//! is refused naming its file ([`not_reserved`]), so only a project
//! extension replacing a global one is an override. A component with no
//! recorded digest (hand-placed, `stud ext dev`) is pinned to the bytes
//! read here ([`Discovered::session_pin`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::lockfile::{LockEntry, LockError, Lockfile};
use super::scope::Scope;
use crate::bundled::{BUNDLED, BundledExtension};
use crate::config::ProjectLayer;
use crate::contract::HOST_CONTRACT;
use crate::digest::Sha256Digest;
use crate::manifest::{
    ExtensionId, MAX_MANIFEST_BYTES, Manifest, ManifestError, parse_bundled_manifest,
    parse_manifest,
};
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
    /// Its lockfile entry, when it was installed with `stud ext install`.
    pub lock: Option<LockEntry>,
    /// Linked with `stud ext dev`: read from the author's folder.
    pub dev: bool,
    /// `expected_digest` is the digest its bytes had when discovery read
    /// them (no lockfile records one): a later load that finds other
    /// bytes was not announced by a reload and is refused.
    pub session_pin: bool,
}

impl Discovered {
    /// The component's bytes; a bundled one's are the binary's own, not
    /// a copy.
    pub fn read_bytes(&self) -> std::io::Result<crate::runtime::ComponentBytes> {
        match &self.source {
            ComponentSource::Embedded(bytes) => Ok(crate::runtime::ComponentBytes::Embedded(bytes)),
            ComponentSource::File(path) => std::fs::read(path).map(Into::into),
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
        "{path} was not read: this project is not trusted, so its settings and extensions are off; trust it with `stud trust grant` (or answer the prompt in an interactive run)"
    )]
    ProjectScopeSkipped { path: PathBuf },
    #[error(
        "the extensions in {path} were not loaded: what this project may do changed since you trusted it; run `stud trust grant` (or answer the prompt in an interactive run) to review and accept it"
    )]
    ProjectChanged { path: PathBuf },
    #[error(
        "extension `{id}`: integrity check failed for {path}: expected {expected}, found {actual}; the manifest changed after it was installed. Reinstall it with `stud ext install <source>` or drop it with `stud ext remove {id}`"
    )]
    ManifestIntegrity {
        id: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Dev(#[from] super::dev::DevError),
    #[error("development extension folder {0} is gone; unlink it with `stud ext dev --remove {0}`")]
    DevMissing(PathBuf),
    #[error("development extension `{id}` in {dir} is not built yet; run `stud ext build` there")]
    DevNotBuilt { id: ExtensionId, dir: PathBuf },
    #[error(transparent)]
    Dependency(#[from] super::deps::DependencyProblem),
    #[error(
        "extension `{id}`: extensions.lock points at {path}, which holds `{found}`; reinstall it with `stud ext install <source>`"
    )]
    LockMismatch {
        id: String,
        path: PathBuf,
        found: String,
    },
    #[error(
        "{}: the id `{id}` is reserved for the bundled extension of that name, so this {scope} extension is not loaded (the bundled one is); give it an id of its own in that file",
        .manifest.display()
    )]
    ReservedId {
        id: ExtensionId,
        scope: Scope,
        /// Its `extension.toml`.
        manifest: PathBuf,
    },
    #[error("extension `{id}`: cannot read its component {path} to pin it: {source}")]
    Unpinnable {
        id: ExtensionId,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whether the project scope is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectScope {
    /// No `.stud` folder in the working directory.
    None,
    /// A `.stud` folder the user has not trusted: noted, not read.
    Untrusted(PathBuf),
    /// The trusted `.stud` folder, its security-relevant items accepted.
    Trusted(PathBuf),
    /// A trusted `.stud` folder whose security-relevant items changed since
    /// the user accepted them (`extensions::review`): its other settings
    /// are read, its grants, allowlist, key redirections and extensions
    /// are not, until the user accepts them again.
    Changed(PathBuf),
}

impl ProjectScope {
    /// The project settings layer, when the project is read at all.
    pub fn settings_layer(&self) -> Option<ProjectLayer> {
        match self {
            ProjectScope::Trusted(root) => Some(ProjectLayer {
                path: root.join("settings.json"),
                accepted: true,
            }),
            ProjectScope::Changed(root) => Some(ProjectLayer {
                path: root.join("settings.json"),
                accepted: false,
            }),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
pub struct Discovery {
    /// Effective extensions, ordered by (scope, kind, id).
    pub found: Vec<Discovered>,
    pub problems: Vec<DiscoveryProblem>,
}

impl Discovery {
    /// Bundled, global and (when trusted) project extensions; a project
    /// extension overrides a global one of the same id (no scope takes a
    /// bundled id).
    pub fn scan(home: &StudHome, project: &ProjectScope) -> Self {
        let mut d = Discovery::default();
        let mut by_id: BTreeMap<ExtensionId, Discovered> = BTreeMap::new();
        for parsed in all_bundled() {
            match parsed {
                Ok(x) => {
                    by_id.insert(x.manifest.id.clone(), x);
                }
                Err(p) => d.problems.push(p),
            }
        }
        let global = scan_scope(home.root(), Scope::Global, &mut d.problems);
        for (id, mut x) in global
            .into_iter()
            .chain(dev_links(home.root(), &mut d.problems))
        {
            x.overrides = by_id.get(&id).map(|lower| lower.scope);
            by_id.insert(id, x);
        }
        match project {
            ProjectScope::None => {}
            ProjectScope::Untrusted(path) => d
                .problems
                .push(DiscoveryProblem::ProjectScopeSkipped { path: path.clone() }),
            ProjectScope::Changed(path) => d
                .problems
                .push(DiscoveryProblem::ProjectChanged { path: path.clone() }),
            ProjectScope::Trusted(root) => {
                for (id, mut x) in scan_scope(root, Scope::Project, &mut d.problems) {
                    x.overrides = by_id.get(&id).map(|lower| lower.scope);
                    by_id.insert(id, x);
                }
            }
        }
        let mut found: Vec<Discovered> = by_id.into_values().collect();
        found.sort_by(|a, b| {
            (a.scope, a.manifest.kind.as_str(), a.manifest.id.as_str()).cmp(&(
                b.scope,
                b.manifest.kind.as_str(),
                b.manifest.id.as_str(),
            ))
        });
        let (ordered, problems) = super::deps::order(found);
        d.found = ordered;
        d.problems
            .extend(problems.into_iter().map(DiscoveryProblem::from));
        d
    }
}

/// Why `--with ID=DIR` cannot stand in for an extension.
#[derive(Debug, thiserror::Error)]
pub enum SubstituteError {
    #[error("--with {id}={}: {source}", .dir.display())]
    Folder {
        id: String,
        dir: PathBuf,
        source: Box<DiscoveryProblem>,
    },
    #[error(
        "--with {id}={}: the extension there is `{found}`, not `{id}`; --with runs another build of the same extension",
        .dir.display()
    )]
    OtherId {
        id: String,
        dir: PathBuf,
        found: String,
    },
    #[error("--with {id}=...: no extension `{id}` is installed here (`stud ext list` shows them)")]
    NotInstalled { id: String },
}

impl Discovery {
    /// Run the extension in `dir` (an extension folder: `extension.toml`
    /// and its built component) in place of the installed `id`, its bytes
    /// pinned for the session. Only a replay does this: it may stand in
    /// for a bundled extension, as a build of it under test.
    pub fn substitute(&mut self, id: &str, dir: &Path) -> Result<(), SubstituteError> {
        let folder = |source| SubstituteError::Folder {
            id: id.to_string(),
            dir: dir.to_path_buf(),
            source: Box::new(source),
        };
        let mut x = from_folder(dir, Scope::Global)
            .and_then(pinned)
            .map_err(folder)?;
        if x.manifest.id.as_str() != id {
            return Err(SubstituteError::OtherId {
                id: id.into(),
                dir: dir.to_path_buf(),
                found: x.manifest.id.to_string(),
            });
        }
        let at = self
            .found
            .iter()
            .position(|d| d.manifest.id.as_str() == id)
            .ok_or_else(|| SubstituteError::NotInstalled { id: id.into() })?;
        x.overrides = Some(self.found[at].scope);
        x.dev = true;
        self.found[at] = x;
        Ok(())
    }
}

/// Every bundled extension.
fn all_bundled() -> Vec<Result<Discovered, DiscoveryProblem>> {
    BUNDLED.iter().map(bundled).collect()
}

fn bundled(b: &'static BundledExtension) -> Result<Discovered, DiscoveryProblem> {
    let location = PathBuf::from(format!("bundled:{}", b.dir));
    let manifest = bundled_manifest(b, &location)?;
    Ok(Discovered {
        scope: Scope::Bundled,
        component_path: location.join(b.component_file),
        location,
        manifest,
        source: ComponentSource::Embedded(b.component),
        expected_digest: Sha256Digest::parse(b.sha256),
        overrides: None,
        lock: None,
        dev: false,
        session_pin: false,
    })
}

/// A bundled manifest as the build parsed it (`stud_bundled_manifests`):
/// reading that JSON is several times cheaper than parsing and checking
/// the TOML, which was most of discovery, and a start waits for discovery
/// (docs/benchmarks.md). Only what the build could not parse, or a form
/// this binary cannot read back, is parsed here, and so reported.
fn bundled_manifest(b: &BundledExtension, location: &Path) -> Result<Manifest, ManifestError> {
    stud_bundled_manifests::parsed_manifest(b.id)
        .and_then(|json| serde_json::from_str::<Manifest>(json).ok())
        .filter(|manifest| manifest.id.as_str() == b.id)
        .map_or_else(
            || parse_bundled_manifest(b.manifest, &location.join("extension.toml"), &HOST_CONTRACT),
            Ok,
        )
}

impl Discovered {
    /// Whether its folder's `extension.toml` still says what discovery
    /// read. A reload reads the manifest, then the component: when both
    /// are being replaced in between, the pair would not belong together
    /// (an old manifest's grants with new code, or the reverse).
    pub fn manifest_unchanged(&self) -> bool {
        match &self.source {
            ComponentSource::Embedded(_) => true,
            ComponentSource::File(_) => from_folder(&self.location, self.scope)
                .is_ok_and(|now| now.manifest == self.manifest),
        }
    }
}

/// Refuse an extension outside the bundled scope that takes a bundled id:
/// bundled ids are reserved (`crate::bundled::is_bundled_id`), so what the
/// kernel and the user's settings mean by `console` or `protect-paths` is
/// always the code in this binary.
pub fn not_reserved(x: Discovered) -> Result<Discovered, DiscoveryProblem> {
    if x.scope != Scope::Bundled && crate::bundled::is_bundled_id(x.manifest.id.as_str()) {
        return Err(DiscoveryProblem::ReservedId {
            id: x.manifest.id.clone(),
            scope: x.scope,
            manifest: x.location.join("extension.toml"),
        });
    }
    Ok(x)
}

/// Pin an extension that has no recorded digest (a hand-placed folder, a
/// `stud ext dev` link) to the bytes it has now: every later load in
/// the session (a command at its first use, a fallback config) must find
/// these bytes, or is refused. A reload reads and pins anew (and says so).
fn pinned(mut x: Discovered) -> Result<Discovered, DiscoveryProblem> {
    if x.expected_digest.is_none()
        && let ComponentSource::File(path) = &x.source
    {
        let bytes = std::fs::read(path).map_err(|source| DiscoveryProblem::Unpinnable {
            id: x.manifest.id.clone(),
            path: path.clone(),
            source,
        })?;
        x.expected_digest = Some(Sha256Digest::of(&bytes));
        x.session_pin = true;
    }
    Ok(x)
}

/// One extension folder: `extension.toml` plus its component.
pub fn from_folder(dir: &Path, scope: Scope) -> Result<Discovered, DiscoveryProblem> {
    let bytes = read_manifest(dir)?;
    from_manifest(dir, scope, &bytes)
}

/// The bytes of `<dir>/extension.toml`, read once (what is hashed is what
/// is parsed), refused past [`MAX_MANIFEST_BYTES`].
fn read_manifest(dir: &Path) -> Result<Vec<u8>, DiscoveryProblem> {
    use std::io::Read as _;
    let manifest_path = dir.join("extension.toml");
    let read = |source| DiscoveryProblem::Read {
        path: manifest_path.clone(),
        source,
    };
    let file = std::fs::File::open(&manifest_path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(DiscoveryProblem::TooLarge {
            path: manifest_path,
            size: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

/// An extension folder from manifest bytes already read.
fn from_manifest(dir: &Path, scope: Scope, bytes: &[u8]) -> Result<Discovered, DiscoveryProblem> {
    let manifest_path = dir.join("extension.toml");
    let text = std::str::from_utf8(bytes).map_err(|e| DiscoveryProblem::Read {
        path: manifest_path.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let manifest = parse_manifest(text, &manifest_path, &HOST_CONTRACT)?;
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
        lock: None,
        dev: false,
        session_pin: false,
    })
}

/// The folders linked with `stud ext dev`, in the global scope (they
/// replace an installed extension of the same id while linked).
fn dev_links(home: &Path, problems: &mut Vec<DiscoveryProblem>) -> Vec<(ExtensionId, Discovered)> {
    let links = super::dev::DevLinks::load(home).unwrap_or_else(|e| {
        problems.push(e.into());
        Default::default()
    });
    let mut out = Vec::new();
    for dir in links.folders {
        if !dir.join("extension.toml").is_file() {
            problems.push(DiscoveryProblem::DevMissing(dir));
            continue;
        }
        match from_folder(&dir, Scope::Global)
            .and_then(not_reserved)
            .and_then(pinned)
        {
            Ok(mut x) => {
                x.dev = true;
                out.push((x.manifest.id.clone(), x));
            }
            Err(DiscoveryProblem::ComponentMissing { id, .. }) => {
                problems.push(DiscoveryProblem::DevNotBuilt { id, dir })
            }
            Err(p) => problems.push(p),
        }
    }
    out
}

/// The extensions a project's `.stud` folder brings (pinned and
/// hand-placed), without loading any: what its trust review lists.
pub fn project_extensions(stud_dir: &Path) -> (Vec<Discovered>, Vec<DiscoveryProblem>) {
    let mut problems = Vec::new();
    let found = scan_scope(stud_dir, Scope::Project, &mut problems);
    (found.into_values().collect(), problems)
}

/// One scope's extensions: those in its lockfile (pinned to their
/// digests), then hand-placed folders under `extensions/` (not pinned).
fn scan_scope(
    root: &Path,
    scope: Scope,
    problems: &mut Vec<DiscoveryProblem>,
) -> BTreeMap<ExtensionId, Discovered> {
    let mut out: BTreeMap<ExtensionId, Discovered> = BTreeMap::new();
    let lock = Lockfile::load(root).unwrap_or_else(|e| {
        problems.push(e.into());
        Lockfile::default()
    });
    for (id, entry) in &lock.extensions {
        let dir = root.join(&entry.path);
        match locked(&dir, scope, id, entry).and_then(not_reserved) {
            Ok(x) => {
                out.insert(x.manifest.id.clone(), x);
            }
            Err(p) => problems.push(p),
        }
    }
    for dir in sorted_subdirs(&root.join("extensions")) {
        match from_folder(&dir, scope).and_then(not_reserved) {
            Ok(x) => {
                if let Some(first) = out.get(&x.manifest.id) {
                    problems.push(DiscoveryProblem::Duplicate {
                        id: x.manifest.id.clone(),
                        scope,
                        first: first.location.clone(),
                        second: x.location.clone(),
                    });
                    continue;
                }
                match pinned(x) {
                    Ok(x) => {
                        out.insert(x.manifest.id.clone(), x);
                    }
                    Err(p) => problems.push(p),
                }
            }
            Err(p) => problems.push(p),
        }
    }
    out
}

/// A lockfile entry: the manifest must hash as recorded (so the grant
/// cannot grow behind the user's back); the component's digest is checked
/// at load, before compiling.
fn locked(
    dir: &Path,
    scope: Scope,
    id: &str,
    entry: &LockEntry,
) -> Result<Discovered, DiscoveryProblem> {
    let bytes = read_manifest(dir)?;
    let actual = Sha256Digest::of(&bytes).to_string();
    if actual != entry.manifest {
        return Err(DiscoveryProblem::ManifestIntegrity {
            id: id.to_string(),
            path: dir.join("extension.toml"),
            expected: entry.manifest.clone(),
            actual,
        });
    }
    let mut x = from_manifest(dir, scope, &bytes)?;
    if x.manifest.id.as_str() != id {
        return Err(DiscoveryProblem::LockMismatch {
            id: id.to_string(),
            path: dir.to_path_buf(),
            found: x.manifest.id.to_string(),
        });
    }
    x.expected_digest = Sha256Digest::parse(&entry.component);
    x.lock = Some(entry.clone());
    Ok(x)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &'static str, manifest: &'static str) -> BundledExtension {
        BundledExtension {
            id,
            dir: "test",
            manifest,
            component_file: "x.wasm",
            component: &[],
            sha256: "",
            tool_spec: None,
        }
    }

    /// A bundled manifest is read from the build's parse, not its TOML:
    /// here the TOML beside a bundled id is not even TOML.
    #[test]
    fn a_bundled_manifest_is_read_from_the_form_the_build_parsed() {
        let location = PathBuf::from("bundled:test");
        let m = bundled_manifest(&entry("read", "this is not [toml"), &location)
            .expect("the build's parse of `read`");
        assert_eq!(m.id.as_str(), "read");
    }

    /// With no parse from the build, the TOML is parsed here, and its
    /// problems are reported naming the file.
    #[test]
    fn without_the_builds_parse_the_toml_is_parsed_and_its_problems_reported() {
        let location = PathBuf::from("bundled:test");
        let ok = "id = \"not-built\"\nname = \"N\"\nversion = \"0.1.0\"\nkind = \"tool\"\ncontract = \"^0.1\"\n";
        let m = bundled_manifest(&entry("not-built", ok), &location).expect("parsed");
        assert_eq!(m.id.as_str(), "not-built");
        let e = bundled_manifest(&entry("not-built", "this is not [toml"), &location)
            .expect_err("not TOML");
        assert!(e.to_string().contains("bundled:test/extension.toml"), "{e}");
    }
}
