//! How compiled code becomes executable (issue 42).
//!
//! Wasmtime copies precompiled code into fresh anonymous memory before it
//! makes it executable. For the bundled extensions, whose native code is
//! already in the binary (`stud-native`), that copy cost about 0.8 ms and
//! 0.4 MB resident per component at first use. With this publisher the
//! engine makes the code's text executable where it lies instead: one
//! `mprotect` of pages that are never writable, in the process or on disk.
//!
//! Only x86-64 Linux uses it: there the instruction cache needs no
//! maintenance after code is written, which is what wasmtime's own
//! publishing adds on other architectures. Elsewhere the engine publishes
//! as it always has, and embedded code is copied.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use std::ffi::c_void;
    use std::sync::Arc;

    use rustix::mm::{MprotectFlags, mprotect};
    use wasmtime::CustomCodeMemory;

    use super::Publishing;

    /// Publishes code with `mprotect`, as wasmtime does by default, and
    /// knows embedded code, which is never made writable.
    struct InPlace {
        page: usize,
    }

    impl CustomCodeMemory for InPlace {
        fn required_alignment(&self) -> usize {
            self.page
        }

        fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
            // SAFETY: wasmtime passes the page-aligned text of a code image
            // it owns (or, for embedded code, that lives for the whole
            // process); nothing else maps or runs it yet.
            unsafe { protect(ptr, len, MprotectFlags::READ | MprotectFlags::EXEC) }
        }

        fn unpublish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
            // Embedded code stays executable: several components (another
            // engine's, a reload's, a subagent's) may be running the same
            // blob, and its pages were never writable anyway.
            if stud_native::holds(ptr, len) {
                return Ok(());
            }
            // SAFETY: as above; wasmtime guarantees no code runs from the
            // range any more, and owns it.
            unsafe { protect(ptr, len, MprotectFlags::READ | MprotectFlags::WRITE) }
        }
    }

    /// # Safety
    /// `len` bytes at `ptr` are whole pages the caller may re-protect.
    unsafe fn protect(ptr: *const u8, len: usize, flags: MprotectFlags) -> wasmtime::Result<()> {
        // SAFETY: the caller's.
        unsafe { mprotect(ptr.cast_mut().cast::<c_void>(), len, flags) }.map_err(|e| {
            wasmtime::Error::msg(format!("cannot protect code pages ({flags:?}): {e}"))
        })
    }

    pub fn configure(config: &mut wasmtime::Config) -> Publishing {
        let page = rustix::param::page_size();
        // Embedded blobs are aligned to `stud_native::ALIGN`; code on a
        // larger page could not be published where it lies.
        if page > stud_native::ALIGN {
            return Publishing::Copy;
        }
        config.with_custom_code_memory(Some(Arc::new(InPlace { page })));
        Publishing::InPlace
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod imp {
    pub fn configure(_config: &mut wasmtime::Config) -> super::Publishing {
        super::Publishing::Copy
    }
}

/// How an engine publishes embedded native code; decided once, when the
/// engine is configured, because running code in place is only sound for
/// an engine whose publisher is [`configure`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publishing {
    /// Made executable where it lies in the binary.
    InPlace,
    /// Copied into fresh memory first (wasmtime's default).
    Copy,
}

/// Install stud's publisher in `config` where the platform allows it.
pub use imp::configure;

/// Claim `code` for running in place, once per process: wasmtime keys
/// the code it runs by address, process-wide, so one blob can back only
/// one live deserialization. The runtime that claims a blob shares its
/// component among its extensions; any other engine in the process (a
/// test's second runtime) copies it, as wasmtime does by default.
pub fn claim(code: &'static [u8]) -> bool {
    static CLAIMED: std::sync::Mutex<std::collections::BTreeSet<usize>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    CLAIMED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(code.as_ptr() as usize)
}
