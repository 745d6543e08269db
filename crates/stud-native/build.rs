//! Compiles every bundled extension to native code with the runtime's
//! engine configuration (`stud-engine`) and embeds the results, so a
//! first start of `stud` compiles none of them (issue 42).
//!
//! Each entry names the component it was compiled from by its sha256 and
//! carries the BLAKE3 digest of its own bytes and the engine key it was
//! compiled under; the runtime uses an entry only when all three agree.
//! Compiling is a speed-up, never a requirement: if it fails here (an
//! engine the build machine cannot make, say), the table is empty and the
//! runtime compiles as before.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=STUD_NO_NATIVE");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut table = String::new();
    let mut statics = String::new();
    let engine_key = match compile_all(&out_dir, &mut statics, &mut table) {
        Ok(key) => key,
        Err(why) => {
            println!(
                "cargo:warning=bundled extensions not compiled ahead of time ({why}); stud compiles them at first use"
            );
            table.clear();
            statics.clear();
            String::new()
        }
    };
    let src = format!(
        "/// The engine key the entries were compiled under (empty: none were).\npub const ENGINE_KEY: &str = {engine_key:?};\n{statics}/// The bundled extensions' native code.\npub static NATIVE: &[Native] = &[\n{table}];\n"
    );
    fs::write(out_dir.join("native.rs"), src).expect("write native.rs");
}

/// What one compile thread made: (index in `BUNDLED`, native code).
type Compiled = Result<Vec<(usize, Vec<u8>)>, String>;

fn compile_all(
    out_dir: &std::path::Path,
    statics: &mut String,
    table: &mut String,
) -> Result<String, String> {
    if env::var_os("STUD_NO_NATIVE").is_some() {
        return Err("STUD_NO_NATIVE is set".into());
    }
    let engine = wasmtime::Engine::new(&stud_engine::pooling())
        .or_else(|_| wasmtime::Engine::new(&stud_engine::base_config()))
        .map_err(|e| format!("cannot make the engine: {e}"))?;
    let key = stud_engine::engine_key(&engine);
    let dir = out_dir.join("native");
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // One thread per core: Cranelift compiles a component's functions in
    // parallel too, but the small ones leave cores idle.
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bundled = stud_bundled::BUNDLED;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Compiled> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(b) = bundled.get(i) else {
                            return Ok(done);
                        };
                        let code = engine
                            .precompile_component(b.component)
                            .map_err(|e| format!("{}: {e}", b.id))?;
                        done.push((i, code));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("a compile thread panicked".into()))
            })
            .collect()
    });
    let mut compiled: Vec<(usize, Vec<u8>)> = Vec::new();
    for r in results {
        compiled.extend(r?);
    }
    compiled.sort_by_key(|(i, _)| *i);
    for (i, code) in compiled {
        let b = &bundled[i];
        let path = dir.join(format!("{}.cwasm", b.dir));
        fs::write(&path, &code).map_err(|e| format!("{}: {e}", path.display()))?;
        // Page-aligned, so the runtime can make the code executable where
        // it lies in the binary instead of copying it (see `Page`); in the
        // section of the bundled components, away from the small data a
        // start reads (see `stud-bundled`'s build script).
        let _ = writeln!(
            statics,
            "#[cfg_attr(target_os = \"linux\", unsafe(link_section = \"stud_embedded\"))]\nstatic CODE_{i}: Page<[u8; {}]> = Page(*include_bytes!({:?}));",
            code.len(),
            path.display().to_string(),
        );
        let _ = writeln!(
            table,
            "    Native {{ wasm_sha256: {:?}, code: &CODE_{i}.0, code_blake3: {:?} }},",
            b.sha256,
            blake3::hash(&code).to_hex().as_str(),
        );
    }
    Ok(key)
}
