//! Reads what a component declares before it is compiled: the SDK's
//! contract-version stamp and the names of its top-level imports and
//! exports. This is what lets the host say "built for 0.9, this host
//! supports 0.1.x" instead of failing in the linker.

use semver::Version;
use wasmparser::{Parser, Payload};

use crate::contract;

/// Name of the custom section the SDK stamps (see `stud_sdk::CONTRACT_SECTION`).
pub const CONTRACT_SECTION: &str = "stud:contract-version";

#[derive(Debug, Clone, Default)]
pub struct ComponentInfo {
    /// The stamped contract version, if any.
    pub stamped_contract: Option<String>,
    /// Top-level import names (`stud:extension/log@0.1.0`, `wasi:...`).
    pub imports: Vec<String>,
    /// Top-level export names.
    pub exports: Vec<String>,
}

impl ComponentInfo {
    /// Parse `bytes`; fails if they are not a component.
    pub fn inspect(bytes: &[u8]) -> Result<Self, String> {
        if !Parser::is_component(bytes) {
            return Err(if Parser::is_core_wasm(bytes) {
                "it is a core module, not a component".into()
            } else {
                "it is not WebAssembly".into()
            });
        }
        let mut info = ComponentInfo::default();
        let mut depth = 0usize;
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|e| format!("malformed: {e}"))?;
            match payload {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::ComponentImportSection(reader) if depth == 0 => {
                    for import in reader {
                        let import = import.map_err(|e| format!("malformed import: {e}"))?;
                        info.imports.push(import.name.name.to_string());
                    }
                }
                Payload::ComponentExportSection(reader) if depth == 0 => {
                    for export in reader {
                        let export = export.map_err(|e| format!("malformed export: {e}"))?;
                        info.exports.push(export.name.name.to_string());
                    }
                }
                Payload::CustomSection(reader) if reader.name() == CONTRACT_SECTION => {
                    let text = String::from_utf8_lossy(reader.data()).trim().to_string();
                    info.stamped_contract.get_or_insert(text);
                }
                _ => {}
            }
        }
        Ok(info)
    }

    /// The contract version the component was built against: the stamp if
    /// present, else the version on its `stud:extension` interface names.
    pub fn contract_version(&self) -> Option<String> {
        if let Some(stamp) = &self.stamped_contract {
            return Some(stamp.clone());
        }
        self.imports
            .iter()
            .chain(&self.exports)
            .filter_map(|name| interface_version(name))
            .next()
    }

    /// `Ok` if the host supports the contract the component was built for.
    pub fn check_contract(&self) -> Result<(), String> {
        let built_for = self
            .contract_version()
            .unwrap_or_else(|| "an unknown contract (no stud:extension interfaces)".into());
        let mut versions = self
            .imports
            .iter()
            .chain(&self.exports)
            .filter_map(|n| interface_version(n));
        let supported = |v: &str| Version::parse(v).is_ok_and(|v| contract::is_supported(&v));
        if supported(&built_for) && versions.all(|v| supported(&v)) {
            Ok(())
        } else {
            Err(built_for)
        }
    }

    /// Our package's interfaces this component imports, without version:
    /// `log`, `http`, ...
    pub fn stud_imports(&self) -> impl Iterator<Item = &str> {
        self.imports.iter().filter_map(|n| interface_name(n))
    }

    pub fn exports_interface(&self, interface: &str) -> bool {
        self.exports
            .iter()
            .any(|n| interface_name(n) == Some(interface))
    }
}

/// `stud:extension/log@0.1.0` -> `log`.
fn interface_name(full: &str) -> Option<&str> {
    let rest = full.strip_prefix(contract::PACKAGE)?.strip_prefix('/')?;
    Some(rest.split('@').next().unwrap_or(rest))
}

/// `stud:extension/log@0.1.0` -> `0.1.0`.
fn interface_version(full: &str) -> Option<String> {
    let rest = full.strip_prefix(contract::PACKAGE)?.strip_prefix('/')?;
    rest.split_once('@').map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions() {
        assert_eq!(interface_name("stud:extension/log@0.1.0"), Some("log"));
        assert_eq!(interface_name("wasi:cli/stderr@0.2.0"), None);
        assert_eq!(
            interface_version("stud:extension/tool-api@0.9.0").as_deref(),
            Some("0.9.0")
        );
    }

    #[test]
    fn rejects_non_components() {
        assert!(ComponentInfo::inspect(b"not wasm").is_err());
        assert!(
            ComponentInfo::inspect(b"\0asm\x01\0\0\0")
                .unwrap_err()
                .contains("core module")
        );
    }
}
