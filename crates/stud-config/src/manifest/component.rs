//! The `component` key: which file in the extension folder is the wasm
//! component. It is joined onto the folder path by installers and the
//! loader, so anything that could leave the folder is rejected here.

use std::path::PathBuf;

use super::problems::quote;

/// Used when the manifest has no `component` key.
pub const DEFAULT_COMPONENT: &str = "extension.wasm";

/// Checks a `component` value; the error completes "`component`: ...".
pub fn parse_component(text: &str) -> Result<PathBuf, String> {
    let shown = quote(text);
    let fix = "write a file name inside the extension folder, e.g. component = \"extension.wasm\"";
    let reason = if text.is_empty() {
        Some("is empty".to_string())
    } else if text.starts_with('/') || text.starts_with('\\') || text.contains(':') {
        Some(format!("{shown} is an absolute path"))
    } else if text.contains('\\') {
        Some(format!("{shown} uses `\\`; separate folders with `/`"))
    } else if text.chars().any(char::is_control) {
        Some("contains control characters".to_string())
    } else if text.split('/').any(|part| part == "..") {
        Some(format!("{shown} leaves the extension folder with `..`"))
    } else if text.split('/').any(|part| part.is_empty() || part == ".") {
        Some(format!("{shown} has an empty or `.` path segment"))
    } else if !text.ends_with(".wasm") || text.ends_with("/.wasm") || text == ".wasm" {
        Some(format!("{shown} is not a .wasm file"))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(format!("{reason}; {fix}")),
        None => Ok(PathBuf::from(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_wasm_paths() {
        for ok in ["extension.wasm", "bin/tool.wasm", "a-b_c.wasm"] {
            assert!(parse_component(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/abs.wasm",
            "C:/x.wasm",
            "..\\x.wasm",
            "../x.wasm",
            "a/../../x.wasm",
            "./x.wasm",
            "a//x.wasm",
            "x.wat",
            ".wasm",
            "a/.wasm",
            "x.wasm\n",
        ] {
            assert!(parse_component(bad).is_err(), "{bad}");
        }
    }
}
