//! Embedded bytes that are read once, to be checked, and little after.
//!
//! A bundled component's first use hashes every byte of its wasm (sha256,
//! the integrity check); after that the wasm is not read again, because
//! its native code runs. A page of the binary stays mapped once read, so
//! the check kept each used component's wasm in the process's resident
//! size. Read through [`read_once`], each chunk's whole pages are handed
//! back to the kernel once they are hashed (`MADV_DONTNEED`): they are
//! clean pages of the binary's file, still in the page cache, and a later
//! read maps the same bytes again. (The native code's BLAKE3 check reads
//! it plainly: the code is mapped again as soon as it runs, so handing it
//! back measured no smaller and no faster; `docs/benchmarks.md`.)
//!
//! Only memory of a read-only file mapping is handed back: the same call
//! on anonymous memory would zero it. [`read_once`] checks, once per
//! process, that the binary's read-only image is such a mapping
//! (`/proc/self/maps`); elsewhere, or if it is not, it only reads.

use std::sync::OnceLock;

/// Bytes hashed between two hand-backs: large enough that the hash runs
/// at full speed, small enough that little is resident at once.
pub const CHUNK: usize = 256 * 1024;

/// Feed `bytes` to `consume` in order, a [`CHUNK`] at a time; if they lie
/// in the binary's read-only file mapping, hand each chunk's whole pages
/// back after `consume` has read it.
pub fn read_once(bytes: &'static [u8], mut consume: impl FnMut(&[u8])) {
    let release = in_read_only_image(bytes);
    for chunk in bytes.chunks(CHUNK) {
        consume(chunk);
        if release {
            hand_back(chunk);
        }
    }
}

/// Whether all of `bytes` lies in one read-only, file-backed mapping.
fn in_read_only_image(bytes: &[u8]) -> bool {
    let (start, end) = (
        bytes.as_ptr() as usize,
        bytes.as_ptr() as usize + bytes.len(),
    );
    read_only_file_mappings()
        .iter()
        .any(|&(lo, hi)| lo <= start && end <= hi)
}

/// The process's read-only, private, file-backed mappings, read once.
fn read_only_file_mappings() -> &'static [(usize, usize)] {
    static MAPPINGS: OnceLock<Vec<(usize, usize)>> = OnceLock::new();
    MAPPINGS.get_or_init(|| {
        if !cfg!(target_os = "linux") {
            return Vec::new();
        }
        std::fs::read_to_string("/proc/self/maps")
            .map(|maps| maps.lines().filter_map(read_only_file_mapping).collect())
            .unwrap_or_default()
    })
}

/// One `/proc/self/maps` line, if it is a read-only (`r--p` or `r-xp`)
/// mapping of a file (a non-zero inode).
fn read_only_file_mapping(line: &str) -> Option<(usize, usize)> {
    let mut fields = line.split_whitespace();
    let (range, perms) = (fields.next()?, fields.next()?);
    let (_offset, _device, inode) = (fields.next()?, fields.next()?, fields.next()?);
    if !(perms.starts_with('r') && perms.as_bytes().get(1) == Some(&b'-') && perms.ends_with('p'))
        || inode == "0"
    {
        return None;
    }
    let (lo, hi) = range.split_once('-')?;
    Some((
        usize::from_str_radix(lo, 16).ok()?,
        usize::from_str_radix(hi, 16).ok()?,
    ))
}

/// Hand back the whole pages inside `chunk`; a page it shares with
/// other data stays.
fn hand_back(chunk: &[u8]) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf only reads a constant of the system.
        let page = match usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }) {
            Ok(page) if page.is_power_of_two() => page,
            _ => return,
        };
        let start = (chunk.as_ptr() as usize).next_multiple_of(page);
        let end = (chunk.as_ptr() as usize + chunk.len()) / page * page;
        if start < end {
            // SAFETY: the range lies in a private, read-only file mapping
            // (`in_read_only_image`): no one can have written to it, and
            // after MADV_DONTNEED a read maps the file's same bytes again.
            // The call changes no mapping's protection or extent.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = chunk;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the page at `address` is mapped in this process
    /// (`/proc/self/pagemap`, bit 63: present).
    fn mapped(address: usize) -> Option<bool> {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut pagemap = std::fs::File::open("/proc/self/pagemap").ok()?;
        pagemap
            .seek(SeekFrom::Start((address / 4096 * 8) as u64))
            .ok()?;
        let mut entry = [0u8; 8];
        pagemap.read_exact(&mut entry).ok()?;
        Some(u64::from_le_bytes(entry) >> 63 == 1)
    }

    #[test]
    fn only_read_only_file_mappings_count() {
        let file = "55d0c2a00000-55d0c2b00000 r--p 00000000 fe:00 6663163 /usr/bin/stud";
        assert_eq!(
            read_only_file_mapping(file),
            Some((0x55d0c2a00000, 0x55d0c2b00000))
        );
        let code = "55d0c2b00000-55d0c2c00000 r-xp 00100000 fe:00 6663163 /usr/bin/stud";
        assert!(read_only_file_mapping(code).is_some());
        for line in [
            "7f0000000000-7f0000001000 rw-p 00000000 00:00 0",
            "7f0000000000-7f0000001000 r--p 00000000 00:00 0",
            "55d0c2c00000-55d0c2d00000 rw-p 00200000 fe:00 6663163 /usr/bin/stud",
            "55d0c2c00000-55d0c2d00000 r--s 00200000 fe:00 6663163 /dev/shm/x",
            "garbage",
        ] {
            assert_eq!(read_only_file_mapping(line), None, "{line}");
        }
    }

    /// A chunk read from the binary's image reads the same after its
    /// pages are handed back; heap memory is never handed back (it would
    /// read as zeros).
    #[test]
    fn bytes_read_once_are_the_same_bytes_after() {
        let blob = stud_bundled::BUNDLED
            .iter()
            .map(|b| b.component)
            .find(|c| c.len() > 4 * 4096)
            .expect("a bundled component");
        assert!(
            in_read_only_image(blob),
            "the blobs lie in the binary's image"
        );
        let before = blake3::hash(blob);
        let mut seen = blake3::Hasher::new();
        read_once(blob, |chunk| {
            seen.update(chunk);
        });
        assert_eq!(seen.finalize(), before);
        // A page wholly inside the first chunk (the blob need not start
        // on a page).
        let page = (blob.as_ptr() as usize + 4096) / 4096 * 4096;
        if cfg!(target_os = "linux") {
            assert_eq!(mapped(page), Some(false), "handed back");
        }
        assert_eq!(blake3::hash(blob), before, "re-read after the hand-back");
        if cfg!(target_os = "linux") {
            assert_eq!(mapped(page), Some(true), "mapped again by the read");
        }
        let heap: &'static [u8] = Box::leak(vec![7u8; 3 * CHUNK].into_boxed_slice());
        assert!(!in_read_only_image(heap));
        read_once(heap, |_| {});
        assert!(heap.iter().all(|&b| b == 7));
    }
}
