//! The bundled extensions' manifests as the host parsed them when stud was
//! built (this crate's build script), so discovery reads JSON instead of
//! parsing and checking each TOML file at every start (issue 42).
//!
//! The JSON is the serde form of `stud_config::manifest::Manifest`; this
//! crate holds only the text, so it links nothing. The golden-manifest
//! test checks each entry against a full parse of its manifest.

include!(concat!(env!("OUT_DIR"), "/manifests.rs"));

/// The manifest of the bundled extension `id`, as the host parsed it when
/// stud was built, when it parsed then.
pub fn parsed_manifest(id: &str) -> Option<&'static str> {
    PARSED_MANIFESTS
        .iter()
        .find(|(of, _)| *of == id)
        .and_then(|(_, json)| *json)
}
