//! Reads what a component declares before it is compiled: the SDK's
//! contract-version stamp and the names of its top-level imports and
//! exports. This is what lets the host say "built for 0.9, this host
//! supports 0.1.x" instead of failing in the linker.

use semver::Version;
use wasmparser::{Chunk, Parser, Payload};

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
        for payload in sections(bytes) {
            match payload? {
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

/// Every section of `bytes`, nested modules and components included, in
/// order, but not the function bodies: a code section is stepped over
/// whole. Asking a bundled UI whether it draws a screen must not read its
/// megabyte of code: those pages would stay in the process's resident
/// size (`docs/benchmarks.md`, "Code layout"). The compiler checks the
/// bodies.
fn sections(bytes: &[u8]) -> impl Iterator<Item = Result<Payload<'_>, String>> {
    let mut stack = Vec::new();
    let mut parser = Parser::new(0);
    let mut data = bytes;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let step = match parser.parse(data, true) {
            Ok(Chunk::Parsed { consumed, payload }) => data
                .get(consumed..)
                .map(|rest| (rest, payload))
                .ok_or_else(|| "malformed: a section runs past the end".to_string()),
            Ok(Chunk::NeedMoreData(_)) => {
                Err("malformed: it ends in the middle of a section".into())
            }
            Err(e) => Err(format!("malformed: {e}")),
        };
        let (rest, payload) = match step {
            Ok(step) => step,
            Err(e) => {
                done = true;
                return Some(Err(e));
            }
        };
        data = rest;
        match &payload {
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                match data.get(*size as usize..) {
                    Some(rest) => data = rest,
                    None => {
                        done = true;
                        return Some(Err("malformed: the code section runs past the end".into()));
                    }
                }
            }
            Payload::ModuleSection { parser: inner, .. }
            | Payload::ComponentSection { parser: inner, .. } => {
                stack.push(parser.clone());
                parser = inner.clone();
            }
            Payload::End(_) => match stack.pop() {
                Some(outer) => parser = outer,
                None => done = true,
            },
            _ => {}
        }
        Some(Ok(payload))
    })
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

    /// What a walk through every payload, function bodies included,
    /// finds: `inspect` read this way before it stepped over code.
    fn walked(bytes: &[u8]) -> (Option<String>, Vec<String>, Vec<String>) {
        let (mut stamp, mut imports, mut exports, mut depth) = (None, vec![], vec![], 0usize);
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.expect("well-formed") {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::ComponentImportSection(r) if depth == 0 => imports.extend(
                    r.into_iter()
                        .map(|i| i.expect("import").name.name.to_string()),
                ),
                Payload::ComponentExportSection(r) if depth == 0 => exports.extend(
                    r.into_iter()
                        .map(|e| e.expect("export").name.name.to_string()),
                ),
                Payload::CustomSection(r) if r.name() == CONTRACT_SECTION => {
                    stamp.get_or_insert(String::from_utf8_lossy(r.data()).trim().to_string());
                }
                _ => {}
            }
        }
        (stamp, imports, exports)
    }

    #[test]
    fn stepping_over_code_finds_what_a_full_walk_finds_in_every_bundled_component() {
        for b in stud_bundled::BUNDLED {
            let info = ComponentInfo::inspect(b.component).expect(b.id);
            assert!(info.stamped_contract.is_some(), "{}: stamp", b.id);
            assert_eq!(
                (info.stamped_contract, info.imports, info.exports),
                walked(b.component),
                "{}",
                b.id
            );
        }
    }

    /// A component cut anywhere is refused exactly where a full walk
    /// refuses it (a cut between two top-level sections leaves a shorter
    /// component), with a reason, and never read past its end.
    #[test]
    fn a_cut_component_is_malformed_where_a_full_walk_says_so() {
        let whole = stud_bundled::BUNDLED
            .iter()
            .find(|b| b.id == "read")
            .expect("the read tool")
            .component;
        let mut refused = 0;
        for cut in (8..whole.len()).step_by(whole.len() / 97) {
            let part = &whole[..cut];
            let walk_ok = Parser::new(0).parse_all(part).all(|p| p.is_ok());
            match ComponentInfo::inspect(part) {
                Ok(_) => assert!(walk_ok, "{cut}: accepted, but a full walk refuses it"),
                Err(e) => {
                    assert!(!walk_ok, "{cut}: refused ({e}), but a full walk accepts it");
                    assert!(e.starts_with("malformed"), "{cut}: {e}");
                    refused += 1;
                }
            }
        }
        assert!(refused > 90, "most cuts fall inside a section: {refused}");
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
