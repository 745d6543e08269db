//! The bundled extensions compiled to native code when stud was built
//! (by this crate's build script, with the runtime's engine
//! configuration), so a first start compiles none of them.
//!
//! Native code runs unchecked once loaded, so an entry is only ever used
//! through [`lookup`], which insists on three things: the component's
//! sha256 (the one the runtime has just verified), the engine key of the
//! engine that will run it, and the BLAKE3 digest of the code itself.

/// The size every embedded blob is aligned to: a page on every platform
/// stud runs on, so the runtime can make a blob's code executable where it
/// lies (one `mprotect`) rather than copy it into fresh memory first.
pub const ALIGN: usize = 4096;

/// Bytes aligned to [`ALIGN`].
#[repr(C, align(4096))]
pub struct Page<T: ?Sized>(pub T);

/// One bundled component's native code.
pub struct Native {
    /// Hex sha256 of the component the code was compiled from.
    pub wasm_sha256: &'static str,
    /// What `Engine::precompile_component` made of it; starts on a page.
    pub code: &'static [u8],
    /// Hex BLAKE3 of `code`, recorded when it was made.
    pub code_blake3: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/native.rs"));

pub mod resident;

/// Why there is no usable native code for a component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// None was made for this component (not bundled, or not compiled).
    NoEntry,
    /// It was made for another engine (another CPU, another configuration).
    OtherEngine,
    /// Its bytes are not the ones recorded: damaged or altered.
    Altered,
}

/// The native code for the component whose sha256 is `wasm_sha256`, for
/// an engine whose key is `engine_key`, if it is there and intact.
pub fn lookup(wasm_sha256: &str, engine_key: &str) -> Result<&'static [u8], Miss> {
    find(NATIVE, ENGINE_KEY, wasm_sha256, engine_key)
}

/// Whether `len` bytes at `ptr` lie inside one embedded blob: such memory
/// belongs to the binary's read-only image, may be the code of several
/// components at once, and must never become writable.
pub fn holds(ptr: *const u8, len: usize) -> bool {
    let (start, end) = (ptr as usize, (ptr as usize).saturating_add(len));
    NATIVE.iter().any(|n| {
        let base = n.code.as_ptr() as usize;
        base <= start && end <= base + n.code.len()
    })
}

fn find(
    table: &'static [Native],
    built_for: &str,
    wasm_sha256: &str,
    engine_key: &str,
) -> Result<&'static [u8], Miss> {
    let entry = table
        .iter()
        .find(|n| n.wasm_sha256 == wasm_sha256)
        .ok_or(Miss::NoEntry)?;
    if built_for != engine_key {
        return Err(Miss::OtherEngine);
    }
    // `Hash`'s equality is constant-time; a malformed record never matches.
    let recorded = blake3::Hash::from_hex(entry.code_blake3).map_err(|_| Miss::Altered)?;
    if blake3::hash(entry.code) != recorded {
        return Err(Miss::Altered);
    }
    Ok(entry.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    static CODE: &[u8] = b"native code";
    static TABLE: &[Native] = &[Native {
        wasm_sha256: "aa",
        code: CODE,
        code_blake3: "",
    }];

    fn table_with(digest: &'static str) -> &'static [Native] {
        Box::leak(Box::new([Native {
            wasm_sha256: "aa",
            code: CODE,
            code_blake3: digest,
        }]))
    }

    #[test]
    fn only_the_same_component_engine_and_bytes_are_used() {
        let good: &'static str =
            Box::leak(blake3::hash(CODE).to_hex().to_string().into_boxed_str());
        let table = table_with(good);
        assert_eq!(find(table, "k", "aa", "k"), Ok(CODE));
        assert_eq!(find(table, "k", "bb", "k"), Err(Miss::NoEntry));
        assert_eq!(find(table, "k", "aa", "other"), Err(Miss::OtherEngine));
        let wrong: &'static str = Box::leak(
            blake3::hash(b"other code")
                .to_hex()
                .to_string()
                .into_boxed_str(),
        );
        assert_eq!(find(table_with(wrong), "k", "aa", "k"), Err(Miss::Altered));
        assert_eq!(find(TABLE, "k", "aa", "k"), Err(Miss::Altered));
    }

    /// Every bundled extension has native code, made for one engine (a
    /// build with `STUD_NO_NATIVE` set fails here, as it should: it ships
    /// without).
    #[test]
    fn blobs_start_on_a_page_and_are_known_by_address() {
        for n in NATIVE {
            assert_eq!(n.code.as_ptr() as usize % ALIGN, 0);
            assert!(holds(n.code.as_ptr(), n.code.len()));
            assert!(!holds(n.code.as_ptr(), n.code.len() + 1));
        }
        assert!(!holds(CODE.as_ptr(), CODE.len()));
    }

    /// The components and their code lie in one section of their own
    /// (`stud_embedded`, whose bounds the linker names), which holds none
    /// of the small data a start reads (manifests, specs): reading a
    /// manifest must not map a component's pages beside it.
    #[cfg(target_os = "linux")]
    #[test]
    fn embedded_bytes_lie_in_their_own_section() {
        unsafe extern "C" {
            static __start_stud_embedded: u8;
            static __stop_stud_embedded: u8;
        }
        // Only the symbols' addresses are taken, which needs no `unsafe`.
        let (lo, hi) = (
            &raw const __start_stud_embedded as usize,
            &raw const __stop_stud_embedded as usize,
        );
        let range = |b: &[u8]| (b.as_ptr() as usize, b.as_ptr() as usize + b.len());
        let blobs = NATIVE
            .iter()
            .map(|n| (n.code, "native code"))
            .chain(stud_bundled::BUNDLED.iter().map(|b| (b.component, b.id)));
        for (bytes, what) in blobs {
            let (start, end) = range(bytes);
            assert!(lo <= start && end <= hi, "{what} lies outside the section");
        }
        for b in stud_bundled::BUNDLED {
            for small in [Some(b.manifest), b.tool_spec].into_iter().flatten() {
                let (start, end) = range(small.as_bytes());
                assert!(
                    end <= lo || start >= hi,
                    "{}'s manifest or spec lies among the blobs",
                    b.id
                );
            }
        }
    }

    #[test]
    fn every_bundled_extension_was_compiled() {
        assert!(!ENGINE_KEY.is_empty(), "no native code was built");
        for b in stud_bundled::BUNDLED {
            assert!(
                NATIVE.iter().any(|n| n.wasm_sha256 == b.sha256),
                "{} has no native code",
                b.id
            );
        }
    }
}
