//! What the `stud` binary carries built in: the bundled extensions (the
//! prebuilt components of `prebuilt/` while they are what `plugins/`
//! builds to, otherwise `plugins/` built for `wasm32-wasip2` by this
//! crate's build script; manifests, component bytes and digests embedded)
//! and the SDK kit that `stud ext new` unpacks.

/// The folder the embedded components were read from.
pub const WASM_OUT: &str = env!("STUD_WASM_OUT");

/// One embedded extension.
pub struct BundledExtension {
    /// The manifest's `id`: reserved, no other scope may use it.
    pub id: &'static str,
    pub dir: &'static str,
    pub manifest: &'static str,
    pub component_file: &'static str,
    pub component: &'static [u8],
    /// Hex sha256 of `component`, computed at build time.
    pub sha256: &'static str,
    /// A tool's `describe` answer with the config `{}`, recorded in
    /// `plugins/<dir>/tool-spec.json`: a first start learns the
    /// bundled tools' specs without compiling each tool.
    /// `tests/bundled_specs.rs` checks it against the component.
    pub tool_spec: Option<&'static str>,
}
include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// The recorded spec of the bundled tool whose component has this hex
/// sha256: keyed by the bytes, like the cache's notes, so a copy of the
/// same component anywhere gets it and any other component does not.
pub fn recorded_tool_spec(sha256: &str) -> Option<&'static str> {
    BUNDLED
        .iter()
        .find(|b| b.sha256 == sha256)
        .and_then(|b| b.tool_spec)
}

/// Whether `id` is a bundled extension's. Bundled ids are reserved: a
/// global, project or development extension that takes one is
/// refused, so a name the kernel or the user's settings rely on
/// (`console` answers approvals, `protect-paths` guards) always means
/// the code shipped in this binary.
pub fn is_bundled_id(id: &str) -> bool {
    BUNDLED.iter().any(|b| b.id == id)
}

/// The bundled extension whose tool is called `name` (its recorded
/// spec), when there is one: an allowlist entry `bash:...` means the
/// bundled shell, so no other extension may offer a tool of that name.
pub fn tool_owner(name: &str) -> Option<&'static str> {
    static NAMES: std::sync::OnceLock<Vec<(String, &'static str)>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            BUNDLED
                .iter()
                .filter_map(|b| {
                    let spec: serde_json::Value = serde_json::from_str(b.tool_spec?).ok()?;
                    Some((spec.get("name")?.as_str()?.to_string(), b.id))
                })
                .collect()
        })
        .iter()
        .find(|(tool, _)| tool == name)
        .map(|(_, id)| *id)
}

/// The SDK, WIT and templates embedded for `stud ext new`.
pub mod sdk_kit {
    include!(concat!(env!("OUT_DIR"), "/sdk_kit.rs"));
}
