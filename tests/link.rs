//! What the `stud` binary asks the dynamic loader for (issue 42): the C
//! library and nothing else on Linux with glibc. The unwinder is linked
//! in (`host/build.rs`) and the C math functions it calls are its own
//! (`host/src/libm_calls.rs`); each shared library costs every start its
//! mapping, relocation and, for `libgcc_s`, a constructor that probes the
//! CPU (a trapped `cpuid` costs about 8 µs on these virtual machines).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use object::read::elf::{Dyn as _, ElfFile64, FileHeader as _};
use object::{Endianness, Object as _, ObjectSymbol as _};

/// The `DT_NEEDED` entries of the ELF file at `path`.
fn needed(path: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let data = std::fs::read(path).expect("read the binary");
    let elf = ElfFile64::<Endianness>::parse(&*data).expect("an ELF file");
    let endian = elf.endian();
    let sections = elf
        .elf_header()
        .sections(endian, &*data)
        .expect("section table");
    let (entries, link) = sections
        .dynamic(endian, &*data)
        .expect("dynamic section")
        .expect("a dynamically linked binary");
    let strings = sections
        .strings(endian, &*data, link)
        .expect("dynamic strings");
    let libraries = entries
        .iter()
        .filter(|d| d.tag32(endian) == i32::try_from(object::elf::DT_NEEDED).ok())
        .map(|d| String::from_utf8_lossy(d.string(endian, strings).expect("name")).into_owned())
        .collect();
    let imports = elf
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect();
    (libraries, imports)
}

#[test]
fn the_binary_needs_the_c_library_alone() {
    let (libraries, imports) = needed(std::path::Path::new(env!("CARGO_BIN_EXE_stud")));
    assert!(
        libraries.iter().any(|l| l.starts_with("libc.so")),
        "{libraries:?}"
    );
    let others: Vec<&String> = libraries
        .iter()
        .filter(|l| !l.starts_with("libc.so") && !l.starts_with("ld-linux"))
        .collect();
    assert!(
        others.is_empty(),
        "the stud binary loads {others:?} besides the C library; for libm, a dependency calls a C math function host/src/libm_calls.rs does not provide (the binary's imports: {imports:?})"
    );
}

#[test]
fn a_panic_unwinds_and_backtraces_with_the_linked_unwinder() {
    // This test binary links the same unwinder as `stud` (the `stud`
    // library carries it).
    let (libraries, _) = needed(&std::env::current_exe().expect("this test binary"));
    assert!(
        !libraries.iter().any(|l| l.starts_with("libgcc_s")),
        "{libraries:?}"
    );
    let caught = std::panic::catch_unwind(|| {
        let trace = std::backtrace::Backtrace::force_capture();
        panic!("{trace}");
    });
    let payload = caught.expect_err("the panic is caught");
    let trace = payload.downcast_ref::<String>().expect("the message");
    assert!(
        trace.contains("a_panic_unwinds_and_backtraces_with_the_linked_unwinder"),
        "the backtrace names this test: {trace}"
    );
}
