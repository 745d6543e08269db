//! Generates a kind's export bindings inside the extension crate.
//!
//! Why a proc macro: wit-bindgen embeds a world description in every crate
//! that generates bindings, and the final component must export everything
//! those worlds export. If the SDK generated all nine worlds, every extension
//! would be asked to export all nine kinds. So the SDK generates only the
//! shared imports and types, and each extension generates its own kind's
//! exports here, pointing every import back at the SDK's types.

use proc_macro::TokenStream;

/// Folder of the WIT package this SDK is built against.
const WIT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit/since_v0.1.4");
const PACKAGE: &str = "stud:extension";
const VERSION: &str = "0.1.4";
const BASE_IMPORTS: &[&str] = &[
    "types", "log", "events", "state", "config", "clock", "cancel",
];

fn kind_imports(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "provider" => &["secrets", "http", "provider-types"],
        "tool" => &["interaction", "http", "process", "files", "tool-types"],
        "hook" => &["hook-types"],
        "ui" | "tui" => &["terminal", "interaction"],
        "logger" => &[],
        "context-provider" => &["context-provider-types"],
        "state-machine" => &["state-machine-types"],
        "command" => &["interaction", "session", "command-types"],
        "session-store" => &["session-store-types"],
        _ => return None,
    })
}

/// `__bindings!(tool)`: expands to `wit_bindgen::generate!` for that world.
#[proc_macro]
pub fn __bindings(input: TokenStream) -> TokenStream {
    let kind = input.to_string().replace(' ', "").replace('_', "-");
    let Some(extra) = kind_imports(&kind) else {
        return format!("compile_error!(\"stud-sdk: unknown extension kind `{kind}`\");")
            .parse()
            .expect("compile_error tokens");
    };
    let with: Vec<String> = BASE_IMPORTS
        .iter()
        .chain(extra.iter())
        .map(|iface| {
            format!(
                "\"{PACKAGE}/{iface}@{VERSION}\": ::stud_sdk::wit::stud::extension::{},",
                iface.replace('-', "_")
            )
        })
        .collect();
    format!(
        "::stud_sdk::__private::wit_bindgen::generate!({{
            path: {WIT_DIR:?},
            world: \"{PACKAGE}/{kind}@{VERSION}\",
            with: {{ {with} }},
            runtime_path: \"::stud_sdk::__private::wit_bindgen::rt\",
        }});",
        with = with.join("\n")
    )
    .parse()
    .expect("generated bindings tokens")
}
