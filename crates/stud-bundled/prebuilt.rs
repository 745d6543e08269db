//! The prebuilt bundled components (`crates/stud-bundled/prebuilt/`) and
//! the key of the sources they were built from.
//!
//! Shared by `stud-bundled`'s build script, which embeds them when their
//! key is the sources' key (so a first build compiles none of the 45
//! components), and by the `stud-prebuilt` tool, which makes them and
//! checks that the sources build to exactly these bytes (issue 42).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// What the components are built from, relative to the repository root.
/// Every file under these goes into the key, except `plugins/target`: a
/// file the key does not cover could change the components unseen, so the
/// list errs on the side of more (a manifest edit means a refresh too).
pub const INPUTS: &[&str] = &[
    "wit",
    // All of it, examples and templates too: `plugins/.sdk` links to it.
    "sdk",
    "plugins",
    // The flags the components are built with.
    "crates/stud-bundled/wasm_build.rs",
];

/// The folder of the prebuilt components, relative to the repository root.
pub const DIR: &str = "crates/stud-bundled/prebuilt";

/// The record of what the folder's components were built from.
pub const RECORD: &str = "inputs.txt";

/// What the prebuilt components were built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// [`sources_key`] of the tree they were built from.
    pub key: String,
    /// `rustc -V` of the compiler that built them: the bytes are
    /// reproducible with that compiler only.
    pub rustc: String,
}

impl Record {
    pub fn parse(text: &str) -> Result<Record, String> {
        let mut key = None;
        let mut rustc = None;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once(' ') {
                Some(("key", v)) => key = Some(v.trim().to_string()),
                Some(("rustc", v)) => rustc = Some(v.trim().to_string()),
                _ => return Err(format!("unexpected line `{line}`")),
            }
        }
        Ok(Record {
            key: key.ok_or("no `key` line")?,
            rustc: rustc.ok_or("no `rustc` line")?,
        })
    }

    pub fn render(&self) -> String {
        format!(
            "# What the components in this folder were built from: a sha256 over the\n\
             # files crates/stud-bundled/prebuilt.rs lists, and the compiler. Written by\n\
             # `cargo run -p stud-prebuilt -- refresh`; `verify` rebuilds and compares.\n\
             key {}\nrustc {}\n",
            self.key, self.rustc
        )
    }

    /// The record in `root`'s prebuilt folder.
    pub fn read(root: &Path) -> Result<Record, String> {
        let path = root.join(DIR).join(RECORD);
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Record::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Where the bundled components come from in a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The committed components: their record's key is the sources' key.
    Prebuilt,
    /// A build of `plugins/`: the sources differ from what the prebuilt
    /// components were made from, there is no record, or the person asked.
    FromSource,
}

/// The prebuilt components only when they are known to be what the
/// sources are; anything else (no record, an unreadable one, another key)
/// builds from source.
pub fn choose(record: Option<&Record>, key: &str, asked_from_source: bool) -> Source {
    match record {
        Some(r) if !asked_from_source && r.key == key => Source::Prebuilt,
        _ => Source::FromSource,
    }
}

/// A sha256 over every input: for each, in path order, its kind (file or
/// link), its path (relative, with `/`), its length and its bytes (a
/// link's target text).
pub fn sources_key(root: &Path) -> io::Result<String> {
    let inputs = INPUTS
        .iter()
        .map(|i| canonical(&root.join(i)))
        .collect::<io::Result<Vec<_>>>()?;
    let skip = root.join("plugins").join("target");
    let mut files = Vec::new();
    for input in INPUTS {
        collect(&root.join(input), &skip, &mut files)?;
    }
    let mut named = files
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(root)
                .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            Ok((rel, path))
        })
        .collect::<io::Result<Vec<_>>>()?;
    named.sort();
    let mut hash = Sha256::new();
    for (rel, path) in named {
        let (kind, bytes) = if fs::symlink_metadata(&path)
            .map_err(|e| at(&path, e))?
            .file_type()
            .is_symlink()
        {
            linked_inside(&path, &inputs)?;
            let target = fs::read_link(&path).map_err(|e| at(&path, e))?;
            (b'l', target.to_string_lossy().into_owned().into_bytes())
        } else {
            (b'f', fs::read(&path).map_err(|e| at(&path, e))?)
        };
        hash.update([kind]);
        hash.update(rel.as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// An error that names the path it is about.
fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn canonical(path: &Path) -> io::Result<PathBuf> {
    path.canonicalize().map_err(|e| at(path, e))
}

/// A link is hashed as its text, so what it points at must be hashed on
/// its own: a link out of the inputs would let the build read what the key
/// never saw.
fn linked_inside(link: &Path, inputs: &[PathBuf]) -> io::Result<()> {
    let target = canonical(link)?;
    if inputs.iter().any(|i| target.starts_with(i)) {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{} links to {}, outside what the key covers ({})",
            link.display(),
            target.display(),
            INPUTS.join(", ")
        )))
    }
}

/// Symbolic links are inputs as links, never followed (`plugins/.sdk`
/// points back at `sdk/`, which is hashed as itself); `skip` is the
/// plugins' own target dir, if a build made one there.
fn collect(path: &Path, skip: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let meta = fs::symlink_metadata(path).map_err(|e| at(path, e))?;
    if meta.is_dir() {
        if path == skip {
            return Ok(());
        }
        for entry in fs::read_dir(path).map_err(|e| at(path, e))? {
            collect(&entry.map_err(|e| at(path, e))?.path(), skip, out)?;
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

/// The bundled extensions' folders under `plugins/`, sorted, each with
/// its manifest's text.
pub fn plugin_dirs(plugins: &Path) -> io::Result<Vec<(PathBuf, String)>> {
    let mut dirs = Vec::new();
    for entry in fs::read_dir(plugins)? {
        let dir = entry?.path();
        let manifest = dir.join("extension.toml");
        if manifest.is_file() {
            let text = fs::read_to_string(&manifest)?;
            dirs.push((dir, text));
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// The `component = "..."` value (see [`top_level_string`]).
pub fn component_file(manifest: &str) -> Option<String> {
    top_level_string(manifest, "component")
}

/// A `key = "..."` value before the first table header, read without a
/// TOML parser (the host parses and validates the whole manifest at load
/// time; the golden-manifest test checks that each bundled `id` recorded
/// from here is the parsed one).
pub fn top_level_string(manifest: &str, key: &str) -> Option<String> {
    manifest
        .lines()
        .take_while(|line| !line.trim_start().starts_with('['))
        .find_map(|line| {
            let (k, value) = line.split_once('=')?;
            (k.trim() == key).then(|| value.trim().trim_matches('"').to_string())
        })
}
