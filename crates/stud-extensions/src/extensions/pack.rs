//! `stud ext pack`: an extension folder as a reproducible `.tar.gz`. The
//! same inputs give the same bytes (entries sorted, mtimes, owners and
//! modes fixed, no name or time in the gzip header), so a publisher's
//! digest can be checked by anyone who builds the same component.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::contract::HOST_CONTRACT;
use crate::digest::Sha256Digest;
use crate::manifest::{Manifest, parse_manifest};

/// The files besides the manifest and the component that travel with it.
const EXTRAS: [&str; 2] = ["README.md", "LICENSE"];

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error(
        "{0}: no extension.toml here; run this in an extension's folder (`stud ext new` makes one)"
    )]
    NoManifest(PathBuf),
    #[error("{0}")]
    Manifest(String),
    #[error(
        "extension `{id}`: its component is not built: looked for {}; build it with `stud ext build` (or `cargo build --release --target wasm32-wasip2`) in {}",
        .looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and "),
        .dir.display()
    )]
    MissingComponent {
        id: String,
        dir: PathBuf,
        looked: Vec<PathBuf>,
    },
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> PackError + 'a {
    move |source| PackError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A packed extension.
pub struct Packed {
    pub manifest: Manifest,
    pub bytes: Vec<u8>,
    pub sha256: Sha256Digest,
    /// The archive's entries, in order.
    pub entries: Vec<String>,
}

/// Where the component of the extension in `dir` is: at its manifest's
/// `component` path, or, for a Rust crate, where `cargo build --release
/// --target wasm32-wasip2` puts it.
pub fn find_component(dir: &Path, manifest: &Manifest) -> Result<PathBuf, PackError> {
    let declared = dir.join(&manifest.component);
    let built = cargo_output(dir);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (declared.is_file(), built.as_deref().filter(|b| b.is_file())) {
        // Both: `cargo build` ran after `stud ext build`; the newer wins.
        (true, Some(b)) if modified(b) > modified(&declared) => return Ok(b.to_path_buf()),
        (true, _) => return Ok(declared),
        (false, Some(b)) => return Ok(b.to_path_buf()),
        (false, None) => {}
    }
    let mut looked = vec![declared];
    looked.extend(built);
    Err(PackError::MissingComponent {
        id: manifest.id.to_string(),
        dir: dir.to_path_buf(),
        looked,
    })
}

/// The release component of the crate in `dir`, if it is one.
fn cargo_output(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let cargo: toml::Table = toml::from_str(&text).ok()?;
    let name = cargo.get("package")?.get("name")?.as_str()?;
    Some(
        dir.join("target/wasm32-wasip2/release")
            .join(format!("{}.wasm", name.replace('-', "_"))),
    )
}

/// Read the manifest of the extension in `dir`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, PackError> {
    let path = dir.join("extension.toml");
    if !path.is_file() {
        return Err(PackError::NoManifest(dir.to_path_buf()));
    }
    let text = std::fs::read_to_string(&path).map_err(io("read", &path))?;
    parse_manifest(&text, &path, &HOST_CONTRACT).map_err(|e| PackError::Manifest(e.to_string()))
}

/// Pack the extension in `dir`: `<id>/extension.toml`, its component at
/// the manifest's path, and a README or LICENSE when there is one.
pub fn pack(dir: &Path) -> Result<Packed, PackError> {
    let manifest = read_manifest(dir)?;
    let component = find_component(dir, &manifest)?;
    let mut files: Vec<(String, PathBuf)> = vec![
        ("extension.toml".into(), dir.join("extension.toml")),
        (manifest.component.to_string_lossy().into_owned(), component),
    ];
    for extra in EXTRAS {
        if dir.join(extra).is_file() {
            files.push((extra.to_string(), dir.join(extra)));
        }
    }
    files.sort();
    let top = manifest.id.to_string();
    let mut tar = tar::Builder::new(Vec::new());
    let mut entries = Vec::new();
    for (name, path) in &files {
        let data = std::fs::read(path).map_err(io("read", path))?;
        let mut header = tar::Header::new_ustar();
        let entry = format!("{top}/{name}");
        header
            .set_path(&entry)
            .map_err(io("name an archive entry for", path))?;
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.append(&header, data.as_slice())
            .map_err(io("add to the archive", path))?;
        entries.push(entry);
    }
    let tarball = tar.into_inner().map_err(io("finish the archive of", dir))?;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(&tarball)
        .and_then(|()| gz.try_finish())
        .map_err(io("compress the archive of", dir))?;
    let bytes = gz.finish().map_err(io("compress the archive of", dir))?;
    Ok(Packed {
        sha256: Sha256Digest::of(&bytes),
        manifest,
        bytes,
        entries,
    })
}
