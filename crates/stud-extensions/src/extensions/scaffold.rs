//! `stud ext new`: a crate for any kind that builds offline against the
//! SDK and WIT of this very stud. The SDK kit is embedded in the binary and
//! unpacked once per contract version into `~/.stud/sdk/<version>/` (or
//! `$STUD_SDK_DIR/<version>/`); the
//! new crate depends on it by path, so it never drifts from the host that
//! will load it.

use std::path::{Path, PathBuf};

use crate::bundled::sdk_kit::SDK_KIT;
use crate::manifest::{ExtensionId, Kind};
use crate::runtime::ownership::{Exposure, FolderRole, folder_exposure, owned_by_me_without};

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(
        "`{name}` cannot name an extension: {reason}; use lowercase letters, digits and single dashes, starting with a letter (e.g. `shout`, `word-count`)"
    )]
    BadName { name: String, reason: String },
    #[error("{0} already exists; pick another name or remove it first")]
    Exists(PathBuf),
    #[error(
        "`{0}` is the id of a bundled extension, and bundled ids are reserved (an extension under it would never load); pick another name"
    )]
    Reserved(String),
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} {}, and `stud ext build` runs code from the SDK kit in {}: {}",
        .folder.display(),
        exposure_text(.exposure),
        .kits.display(),
        exposure_advice(.exposure, .folder)
    )]
    UnsafeKitFolder {
        /// The kits folder or the folder on its way that others may change.
        folder: PathBuf,
        kits: PathBuf,
        exposure: Exposure,
    },
    #[error("the embedded SDK has no `{0}`; this stud binary is incomplete, rebuild it")]
    MissingTemplate(String),
}

fn exposure_text(e: &Exposure) -> String {
    match e {
        Exposure::Owner { uid } => format!("belongs to another user (uid {uid})"),
        Exposure::Group { mode } => {
            format!("may be written by its group, which is not yours alone (mode {mode:o})")
        }
        Exposure::Others { mode } => format!("may be written by anyone (mode {mode:o})"),
    }
}

fn exposure_advice(e: &Exposure, folder: &Path) -> String {
    match e {
        Exposure::Owner { .. } => "point STUD_SDK_DIR at a folder of your own".to_string(),
        Exposure::Group { .. } | Exposure::Others { .. } => format!(
            "`chmod go-w {}` makes it yours alone, or point STUD_SDK_DIR at a folder only you may write",
            folder.display()
        ),
    }
}

/// The kits folder, and every folder on the way to it, as written and as
/// links resolve it: no one else may change what it holds, nor move it
/// away and put another in its place.
fn check_kits_folder(kits: &Path) -> Result<(), ScaffoldError> {
    let absolute = std::path::absolute(kits).map_err(io("find", kits))?;
    let resolved = std::fs::canonicalize(kits).map_err(io("find", kits))?;
    refuse_exposed(&resolved, FolderRole::Holder, kits)?;
    for parent in [absolute.parent(), resolved.parent()].into_iter().flatten() {
        refuse_exposed_on_the_way(parent, kits)?;
    }
    Ok(())
}

/// `from` and every folder above it, as written and as links resolve it,
/// as folders on the way to `kits`.
fn refuse_exposed_on_the_way(from: &Path, kits: &Path) -> Result<(), ScaffoldError> {
    let resolved = std::fs::canonicalize(from).map_err(io("find", from))?;
    for path in [from, resolved.as_path()] {
        for folder in path.ancestors() {
            refuse_exposed(folder, FolderRole::Ancestor, kits)?;
        }
    }
    Ok(())
}

fn refuse_exposed(folder: &Path, role: FolderRole, kits: &Path) -> Result<(), ScaffoldError> {
    let meta = std::fs::metadata(folder).map_err(io("read", folder))?;
    match folder_exposure(&meta, role) {
        None => Ok(()),
        Some(exposure) => Err(ScaffoldError::UnsafeKitFolder {
            folder: folder.to_path_buf(),
            kits: kits.to_path_buf(),
            exposure,
        }),
    }
}

/// The folders on the way to a kits folder not made yet, up to the first
/// that exists: checked before anything is created, so a refused
/// `STUD_SDK_DIR` leaves no folder of ours behind in a place it refused.
fn check_way_before_creating(kits: &Path) -> Result<(), ScaffoldError> {
    let absolute = std::path::absolute(kits).map_err(io("find", kits))?;
    let Some(existing) = absolute.ancestors().find(|a| a.exists()) else {
        return Ok(());
    };
    if existing == absolute {
        return Ok(());
    }
    refuse_exposed_on_the_way(existing, kits)
}

/// Create `path` and the folders on its way, none writable by group or
/// others whatever the umask (under 002 the kits folder would be refused).
fn create_dirs(path: &Path) -> Result<(), ScaffoldError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o755);
    builder.create(path).map_err(io("create", path))
}

/// Write a new file no one else may write, whatever the umask (a kit
/// file others may write is not taken for the kit).
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), ScaffoldError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    let mut file = options.open(path).map_err(io("write", path))?;
    file.write_all(bytes).map_err(io("write", path))
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ScaffoldError + 'a {
    move |source| ScaffoldError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The template (example) name of each kind: `sdk/examples/<t>.rs` and
/// `sdk/templates/<t>.toml`.
fn template(kind: Kind) -> &'static str {
    match kind {
        Kind::Provider => "provider",
        Kind::Tool => "tool",
        Kind::Hook => "hook",
        Kind::Ui => "ui",
        Kind::Logger => "logger",
        Kind::ContextProvider => "context",
        Kind::StateMachine => "state_machine",
        Kind::Command => "command",
        Kind::SessionStore => "session_store",
    }
}

fn kit_file(name: &str) -> Result<&'static [u8], ScaffoldError> {
    SDK_KIT
        .iter()
        .find(|(path, _)| *path == name)
        .map(|(_, bytes)| *bytes)
        .ok_or_else(|| ScaffoldError::MissingTemplate(name.to_string()))
}

fn kit_text(name: &str) -> Result<String, ScaffoldError> {
    Ok(String::from_utf8_lossy(kit_file(name)?).into_owned())
}

/// Whether `dir` holds exactly this binary's kit: every file with its
/// bytes, nothing besides (cargo would run a planted `build.rs`), no links,
/// and nothing anyone else may change. The contents are compared, not a
/// stamp: a stamp only names a kit, and it is cheap (about 180 files, 1 MB).
fn holds_the_kit(dir: &Path) -> bool {
    let expected: std::collections::HashMap<&str, &[u8]> = SDK_KIT.iter().copied().collect();
    let mut seen = 0;
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, rel)) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&folder) else {
            return false;
        };
        if !meta.is_dir() || !owned_by_me_without(&meta, 0o022) {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(&folder) else {
            return false;
        };
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                return false;
            };
            let path = entry.path();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                return false;
            };
            if meta.is_dir() {
                pending.push((path, rel));
                continue;
            }
            let same = meta.is_file()
                && owned_by_me_without(&meta, 0o022)
                && expected
                    .get(rel.as_str())
                    .is_some_and(|bytes| std::fs::read(&path).is_ok_and(|b| b == *bytes));
            if !same {
                return false;
            }
            seen += 1;
        }
    }
    seen == expected.len()
}

/// Unpack the SDK kit into `<kits>/<contract version>/` unless that folder
/// already holds exactly this kit; returns it. Written to a temporary
/// folder first and renamed, so a crash never leaves half a kit, and done
/// under a lock on `<kits>/.lock`: homes sharing `STUD_SDK_DIR` unpack at
/// once, and one replacing a kit must not remove the one another has just
/// put in place and is building against. A kits folder someone else owns
/// or may write is refused: they could change the SDK between this check
/// and cargo's build.
pub fn unpack_kit(kits: &Path) -> Result<PathBuf, ScaffoldError> {
    let dir = kits.join(stud_protocol::CONTRACT_VERSION);
    check_way_before_creating(kits)?;
    create_dirs(kits)?;
    check_kits_folder(kits)?;
    let lock_path = kits.join(".lock");
    let mut lock_options = std::fs::OpenOptions::new();
    lock_options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut lock_options, 0o644);
    let lock = lock_options
        .open(&lock_path)
        .map_err(io("create", &lock_path))?;
    lock.lock().map_err(io("lock", &lock_path))?;
    if holds_the_kit(&dir) {
        return Ok(dir);
    }
    let staging = tempfile::Builder::new()
        .prefix(".kit-")
        .tempdir_in(kits)
        .map_err(io("create a temporary folder in", kits))?;
    // Made as the umask says (group-writable under 002): the kit's own
    // folder must be no one else's to write.
    #[cfg(unix)]
    std::fs::set_permissions(
        staging.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .map_err(io("set the mode of", staging.path()))?;
    for (rel, bytes) in SDK_KIT {
        let path = staging.path().join(rel);
        if let Some(p) = path.parent() {
            create_dirs(p)?;
        }
        write_new(&path, bytes)?;
    }
    // Another stud's kit, or one changed since it was unpacked.
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io("replace", &dir))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &dir).map_err(io("move into place", &dir))?;
    Ok(dir)
}

/// What `new_crate` made.
#[derive(Debug)]
pub struct Created {
    pub dir: PathBuf,
    pub kit: PathBuf,
    pub files: Vec<String>,
}

/// Make `<parent>/<name>/`: a crate for an extension of `kind` named
/// `name` (its id, crate name, and for tools and commands the name the
/// model or the user calls).
pub fn new_crate(
    kits: &Path,
    parent: &Path,
    name: &str,
    kind: Kind,
) -> Result<Created, ScaffoldError> {
    let id: ExtensionId =
        name.parse()
            .map_err(|e: crate::manifest::InvalidId| ScaffoldError::BadName {
                name: name.to_string(),
                reason: e.reason.to_string(),
            })?;
    if crate::bundled::is_bundled_id(id.as_str()) {
        return Err(ScaffoldError::Reserved(name.to_string()));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir));
    }
    let kit = unpack_kit(kits)?;
    let t = template(kind);
    let component = format!("{}.wasm", name.replace('-', "_"));
    let manifest = kit_text(&format!("sdk/templates/{t}.toml"))?
        .replace("{{id}}", id.as_str())
        .replace("{{component}}", &component)
        .replace("{{contract}}", stud_protocol::CONTRACT_VERSION);
    let source = kit_text(&format!("sdk/examples/{t}.rs"))?;
    let sdk_path = kit.join("sdk");
    let cargo = format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
# The SDK of the stud that made this crate (`stud ext new`), unpacked
# from its binary: it matches the host that loads the component.
stud-sdk = {{ path = "{sdk}" }}
# A tool that runs shell lines: key them as `bash` does (docs/writing-extensions.md).
# stud-sdk-shell = {{ path = "{sdk}/shell" }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"

# A crate of its own, even inside another workspace.
[workspace]

# Small components load fast: optimise for size, one unit, no symbols.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
debug = false
strip = true
panic = "unwind"
"#,
        sdk = toml_string(&sdk_path.display().to_string()),
    );
    let readme = readme(name, kind, &component);
    let files: Vec<(&str, String)> = vec![
        ("Cargo.toml", cargo),
        // The bundled extensions' lockfile: cargo keeps only what this
        // crate uses, pinned to versions the cargo cache already has.
        ("Cargo.lock", kit_text("Cargo.lock")?),
        ("extension.toml", manifest),
        ("src/lib.rs", source),
        ("README.md", readme),
        (".gitignore", format!("/target\n/{component}\n")),
    ];
    let staging = tempfile::Builder::new()
        .prefix(".new-")
        .tempdir_in(parent)
        .map_err(io("create a temporary folder in", parent))?;
    let mut written = Vec::new();
    for (rel, text) in &files {
        let path = staging.path().join(rel);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(io("create", p))?;
        }
        std::fs::write(&path, text).map_err(io("write", &path))?;
        written.push(rel.to_string());
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &dir).map_err(io("create", &dir))?;
    Ok(Created {
        dir,
        kit,
        files: written,
    })
}

/// A TOML basic string's body (the path may hold `\` or `"`).
fn toml_string(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

fn readme(name: &str, kind: Kind, component: &str) -> String {
    let what = match kind {
        Kind::Tool => format!("A tool the model calls as `{name}`."),
        Kind::Command => format!("A command: type `/{name} some text` in a session."),
        Kind::Hook => "A guard hook at `tool-call.pre` (see `[[hooks]]` in extension.toml).".into(),
        Kind::Provider => format!("A provider: `stud run --provider {name}`."),
        Kind::Ui => format!(
            "A UI: it observes every session; make it the one that answers questions with `\"active\": {{\"interactor\": \"{name}\"}}` in ~/.stud/settings.json."
        ),
        Kind::SessionStore => format!(
            "A session store: use it with `\"active\": {{\"sessionStore\": \"{name}\"}}` in the settings."
        ),
        Kind::StateMachine => format!("A workflow: `stud run --sm {name}`."),
        other => format!("A {other}."),
    };
    format!(
        r#"# {name}

{what}

## Build, test, install

```sh
stud ext build            # cargo build for wasm32-wasip2, then the load checks
cargo test                # the unit tests, on this machine
stud ext install .        # ask, then install the built {component}
stud ext dev .            # or: use this folder directly, reloaded on each build
```

`src/lib.rs` is the extension; `extension.toml` says what it is and what
it may do (docs/manifest.md in the stud repository has every field).
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_template_and_a_valid_manifest() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        for kind in Kind::ALL {
            let name = format!("x-{}", template(kind).replace('_', "-"));
            let made = new_crate(home.path(), work.path(), &name, kind).unwrap();
            let manifest = crate::extensions::pack::read_manifest(&made.dir).unwrap();
            assert_eq!(manifest.kind, kind);
            assert_eq!(manifest.id.as_str(), name);
            assert!(made.dir.join("src/lib.rs").is_file());
        }
        // The kit is unpacked once and holds the SDK and its WIT.
        let kit = home.path().join(stud_protocol::CONTRACT_VERSION);
        assert!(kit.join("sdk/Cargo.toml").is_file());
        assert!(kit.join("sdk/shell/Cargo.toml").is_file());
        assert!(kit.join("sdk/shell/src/lib.rs").is_file());
        assert!(kit.join("wit/since_v0.1.4/host-socket.wit").is_file());
    }

    /// Homes sharing a kit folder (`STUD_SDK_DIR`) unpack at the same
    /// time: each gets the one complete kit, and no staging folder stays
    /// (only the lock file beside it).
    #[test]
    fn processes_unpacking_at_once_all_get_the_one_kit() {
        let kits = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| unpack_kit(kits.path())))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect()
        });
        let kit = kits.path().join(stud_protocol::CONTRACT_VERSION);
        assert!(dirs.iter().all(|d| d == &kit), "{dirs:?}");
        assert!(kit.join("sdk/Cargo.toml").is_file());
        assert!(holds_the_kit(&kit));
        let mut left: Vec<_> = std::fs::read_dir(kits.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [".lock", stud_protocol::CONTRACT_VERSION].map(std::ffi::OsString::from)
        );
    }

    /// A kit changed on disk (a planted `build.rs`, which cargo would run,
    /// an edited source, a link, a missing file) is not taken for the kit:
    /// unpacking replaces it.
    #[cfg(unix)]
    #[test]
    fn a_tampered_kit_is_replaced() {
        let kits = tempfile::tempdir().unwrap();
        let kit = unpack_kit(kits.path()).unwrap();
        let (rel, _) = SDK_KIT[0];
        let tampers: [fn(&Path, &str); 4] = [
            |k, _| std::fs::write(k.join("sdk/build.rs"), "fn main() {}").unwrap(),
            |k, rel| std::fs::write(k.join(rel), "changed").unwrap(),
            |k, rel| {
                std::fs::remove_file(k.join(rel)).unwrap();
                std::os::unix::fs::symlink("/etc/hostname", k.join(rel)).unwrap();
            },
            |k, rel| std::fs::remove_file(k.join(rel)).unwrap(),
        ];
        for tamper in tampers {
            tamper(&kit, rel);
            assert!(!holds_the_kit(&kit));
            assert_eq!(unpack_kit(kits.path()).unwrap(), kit);
            assert!(holds_the_kit(&kit));
            assert!(!kit.join("sdk/build.rs").exists());
        }
    }

    /// Someone else able to write the kits folder could swap the SDK
    /// between the check and cargo's build: refused, by name.
    #[cfg(unix)]
    #[test]
    fn a_kits_folder_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let kits = tempfile::tempdir().unwrap();
        std::fs::set_permissions(kits.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = unpack_kit(kits.path()).unwrap_err();
        assert!(
            matches!(&e, ScaffoldError::UnsafeKitFolder { folder, exposure: Exposure::Others { .. }, .. } if folder == kits.path()),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains(&kits.path().display().to_string())
                && text.contains("chmod go-w")
                && text.contains("STUD_SDK_DIR"),
            "{text}"
        );
        assert_eq!(std::fs::read_dir(kits.path()).unwrap().count(), 0);
    }

    /// Whoever may write a folder on the way could rename the kits folder
    /// away and put their own in its place: refused, naming that folder,
    /// also when a link leads through it. A sticky one (`/tmp`) keeps
    /// others to their own entries and is fine.
    #[cfg(unix)]
    #[test]
    fn a_folder_on_the_way_others_may_write_is_refused_unless_sticky() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let kits = open.join("mine/kits");
        let e = unpack_kit(&kits).unwrap_err();
        assert!(
            matches!(&e, ScaffoldError::UnsafeKitFolder { folder, .. } if *folder == open),
            "{e}"
        );
        assert!(
            !open.join("mine").exists(),
            "a refused kits folder leaves nothing behind"
        );
        // Through a link that lies in the open folder.
        let safe = root.path().join("safe");
        std::fs::create_dir(&safe).unwrap();
        std::os::unix::fs::symlink(&safe, open.join("link")).unwrap();
        let e = unpack_kit(&open.join("link/kits")).unwrap_err();
        assert!(
            matches!(&e, ScaffoldError::UnsafeKitFolder { folder, .. } if *folder == open),
            "{e}"
        );
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(holds_the_kit(&unpack_kit(&kits).unwrap()));
        assert!(holds_the_kit(&unpack_kit(&open.join("link/kits")).unwrap()));
    }

    #[test]
    fn a_bad_name_or_an_existing_folder_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let e = new_crate(home.path(), work.path(), "Bad_Name", Kind::Tool).unwrap_err();
        assert!(e.to_string().contains("`Bad_Name`"), "{e}");
        std::fs::create_dir(work.path().join("taken")).unwrap();
        let e = new_crate(home.path(), work.path(), "taken", Kind::Tool).unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        assert!(std::fs::read_dir(work.path()).unwrap().count() == 1);
    }
}
