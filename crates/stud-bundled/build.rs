//! Embeds the bundled extensions (manifest, component bytes, sha256) and
//! the SDK kit in this crate, so in the `stud` binary. The components are
//! the prebuilt ones in `prebuilt/` when their record's key is the
//! sources' key, and otherwise `plugins/` built for `wasm32-wasip2` here
//! (see `prebuilt.rs`). The test fixtures are built by
//! `stud-fixtures`, which only the tests depend on. A crate of its own: a change to the kernel never
//! runs it again.
//!
//! Why here: `cargo run` and `cargo test` then work on a fresh clone with no
//! extra step, and the embedded digests are computed from the same bytes
//! that ship. The wasm builds use their own target dir (`target/wasm`) so
//! they never wait on the outer build's lock.

// `stud-prebuilt` (which makes and verifies the folder) uses the rest.
#[allow(dead_code)]
mod prebuilt;
mod wasm_build;

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use prebuilt::{Record, Source};
use sha2::{Digest, Sha256};
use wasm_build::{WASM_TARGET, build_workspace, ensure_wasm_target};

/// The section the embedded components are placed in; `stud-native` puts
/// their native code in the same one.
const EMBEDDED_SECTION: &str = "stud_embedded";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("crates/stud-bundled is two folders down")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let wasm_target_dir = root.join("target").join("wasm");
    let wasm_out = wasm_target_dir.join(WASM_TARGET).join("release");

    for watched in [
        "wit",
        "sdk",
        "plugins",
        prebuilt::DIR,
        "crates/stud-bundled/wasm_build.rs",
        "crates/stud-bundled/prebuilt.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=STUD_SKIP_WASM_BUILD");
    println!("cargo:rerun-if-env-changed=STUD_BUNDLED_FROM_SOURCE");

    let key = prebuilt::sources_key(&root)
        .unwrap_or_else(|e| panic!("reading the bundled extensions' sources: {e}"));
    let record = Record::read(&root);
    let asked = env::var_os("STUD_BUNDLED_FROM_SOURCE").is_some();
    let components = match prebuilt::choose(record.as_ref().ok(), &key, asked) {
        Source::Prebuilt => root.join(prebuilt::DIR),
        Source::FromSource => {
            if !asked {
                let why = match &record {
                    Ok(_) => "plugins/, sdk/ or wit/ changed since they were made".to_string(),
                    Err(e) => e.clone(),
                };
                println!(
                    "cargo:warning=building the bundled extensions from source, not using {} ({why}; `cargo run -p stud-prebuilt -- refresh` updates them)",
                    prebuilt::DIR
                );
            }
            if env::var_os("STUD_SKIP_WASM_BUILD").is_none() {
                ensure_wasm_target();
                build_workspace(&root, &root.join("plugins"), &wasm_target_dir, None)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            wasm_out.clone()
        }
    };

    fs::write(out_dir.join("sdk_kit.rs"), embed_sdk_kit(&root)).expect("write sdk_kit.rs");
    let bundled = embed_bundled(&root.join("plugins"), &components, &out_dir);
    fs::write(out_dir.join("bundled.rs"), bundled).expect("write bundled.rs");
    println!("cargo:rustc-env=STUD_WASM_OUT={}", components.display());
}

/// Copy each plugin's manifest and component into OUT_DIR and generate the
/// table the binary embeds.
fn embed_bundled(plugins: &Path, wasm_out: &Path, out_dir: &Path) -> String {
    let dirs = prebuilt::plugin_dirs(plugins).expect("read plugins/");
    let mut src = String::from(
        "/// Extensions built from `plugins/` and embedded at build time.\npub static BUNDLED: &[BundledExtension] = &[\n",
    );
    // The components themselves, each a static in one section of their
    // own: together, away from the small data a start reads (manifests,
    // specs, tables). The kernel maps a binary's pages in windows around
    // each one read, so a component beside a manifest was made resident
    // by discovery reading the manifest (docs/benchmarks.md, "Code
    // layout").
    let mut statics = String::new();
    for (i, (dir, manifest)) in dirs.into_iter().enumerate() {
        let name = dir
            .file_name()
            .expect("plugin dir name")
            .to_string_lossy()
            .into_owned();
        let component = prebuilt::component_file(&manifest).unwrap_or_else(|| {
            panic!("plugins/{name}/extension.toml needs a `component = \"...wasm\"` line")
        });
        let id = prebuilt::top_level_string(&manifest, "id").unwrap_or_else(|| {
            panic!("plugins/{name}/extension.toml needs an `id = \"...\"` line")
        });
        let wasm = wasm_out.join(&component);
        // A link would embed whatever it points at, which nothing checked.
        let regular = fs::symlink_metadata(&wasm).is_ok_and(|m| m.file_type().is_file());
        assert!(
            regular,
            "{} is not a regular file: a bundled component must be one (run `cargo run -p stud-prebuilt -- refresh`)",
            wasm.display()
        );
        let bytes = fs::read(&wasm).unwrap_or_else(|e| panic!("read {}: {e}", wasm.display()));
        let dest = out_dir.join("bundled").join(&name);
        fs::create_dir_all(&dest).expect("create bundled dir");
        fs::write(dest.join("extension.toml"), &manifest).expect("copy manifest");
        fs::write(dest.join(&component), &bytes).expect("copy component");
        let digest = hex(&Sha256::digest(&bytes));
        // A tool's recorded spec (`tests/bundled_specs.rs` checks it against
        // the component's `describe`).
        let spec = dir.join("tool-spec.json");
        let tool_spec = if spec.is_file() {
            format!("Some(include_str!({:?}))", spec.display().to_string())
        } else {
            "None".to_string()
        };
        let _ = writeln!(
            src,
            "    BundledExtension {{ id: {id:?}, dir: {name:?}, manifest: include_str!({m:?}), component_file: {component:?}, component: &COMPONENT_{i}, sha256: {digest:?}, tool_spec: {tool_spec} }},",
            m = dest.join("extension.toml").display().to_string(),
        );
        let _ = writeln!(
            statics,
            "#[cfg_attr(target_os = \"linux\", unsafe(link_section = \"{EMBEDDED_SECTION}\"))]\nstatic COMPONENT_{i}: [u8; {len}] = *include_bytes!({c:?});",
            len = bytes.len(),
            c = dest.join(&component).display().to_string(),
        );
    }
    src.push_str("];\n");
    src.push_str(&statics);
    src
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The files `stud ext new` unpacks into the stud home so a new crate
/// builds against exactly this SDK and WIT, offline: the SDK crates, the
/// examples (the templates' code), the manifest templates, the WIT and the
/// lockfile the bundled extensions are built with (it pins the SDK's
/// dependencies to versions already in the cargo cache).
fn embed_sdk_kit(root: &Path) -> String {
    let mut files = Vec::new();
    for dir in [
        "sdk/src",
        "sdk/macros/src",
        "sdk/protocol/src",
        "sdk/shell/src",
        "sdk/examples",
        "sdk/templates",
        "wit",
    ] {
        collect(root, &root.join(dir), &mut files);
    }
    for file in [
        "sdk/Cargo.toml",
        "sdk/macros/Cargo.toml",
        "sdk/protocol/Cargo.toml",
        "sdk/shell/Cargo.toml",
    ] {
        files.push((file.to_string(), root.join(file)));
    }
    files.push((
        "Cargo.lock".to_string(),
        root.join("plugins").join("Cargo.lock"),
    ));
    files.sort();
    let mut src = String::from(
        "/// The SDK kit: (path in the kit, bytes).\npub static SDK_KIT: &[(&str, &[u8])] = &[\n",
    );
    for (rel, path) in files {
        let _ = writeln!(
            src,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    src.push_str("];\n");
    src
}

/// Every file under `dir`, named relative to `root` with `/`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, path));
        }
    }
}
