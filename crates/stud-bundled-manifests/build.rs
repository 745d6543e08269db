//! Parses every bundled manifest with the host's own parser (the call a
//! start made before, `parse_bundled_manifest`) and embeds the
//! `Manifest` it made as JSON: reading that is several times cheaper than
//! parsing and checking 45 TOML files at every start (issue 42). One that
//! does not parse is left out, so the runtime parses it and reports why.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut table = String::new();
    for b in stud_bundled::BUNDLED {
        let file = PathBuf::from(format!("bundled:{}/extension.toml", b.dir));
        let parsed = stud_config::manifest::parse_bundled_manifest(
            b.manifest,
            &file,
            &stud_vocab::contract::HOST_CONTRACT,
        )
        .ok()
        .and_then(|manifest| serde_json::to_string(&manifest).ok());
        let _ = writeln!(table, "    ({:?}, {parsed:?}),", b.id);
    }
    let src = format!(
        "/// Each bundled extension's id and its manifest as the host parsed it\n/// when stud was built (the JSON of a `Manifest`), in `BUNDLED` order.\npub static PARSED_MANIFESTS: &[(&str, Option<&str>)] = &[\n{table}];\n"
    );
    std::fs::write(out_dir.join("manifests.rs"), src).expect("write manifests.rs");
}
