//! Makes and verifies the prebuilt bundled components.
//!
//! `stud-bundled`'s build script embeds `crates/stud-bundled/prebuilt/`
//! instead of building `plugins/` when the record there carries the
//! sources' key, which spares a first build the 45 components (issue 42).
//! Those bytes go into every `stud` binary, so they are only as good as the
//! proof that the sources build to them:
//! - `refresh` builds `plugins/` and writes the folder and its record;
//! - `verify` (CI) checks that the record is the sources' key and this
//!   compiler's, builds `plugins/` again and compares every component.

// The build script uses `choose`; this tool and its tests the rest.
#[allow(dead_code)]
#[path = "../../stud-bundled/prebuilt.rs"]
mod prebuilt;
#[path = "../../stud-bundled/wasm_build.rs"]
mod wasm_build;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use prebuilt::Record;

const USAGE: &str = "usage: cargo run -p stud-prebuilt -- refresh|verify
  refresh  build plugins/ and write crates/stud-bundled/prebuilt/ (after changing plugins/, sdk/ or wit/)
  verify   check that plugins/ builds to exactly the prebuilt components (CI)";

fn main() -> ExitCode {
    let root = repo_root();
    let result = match std::env::args().nth(1).as_deref() {
        Some("refresh") => refresh(&root),
        Some("verify") => verify(&root),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/stud-prebuilt is two folders down")
        .to_path_buf()
}

fn refresh(root: &Path) -> Result<()> {
    not_in_git(root)?;
    let key = prebuilt::sources_key(root).context("reading the sources")?;
    let rustc = rustc_version()?;
    let built = build(root)?;
    let names = component_names(root)?;
    let dir = root.join(prebuilt::DIR);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut bytes = 0;
    for name in &names {
        let from = built.join(name);
        bytes += fs::copy(&from, dir.join(name))
            .with_context(|| format!("copying {}", from.display()))?;
    }
    for stale in wasm_files(&dir)?.into_iter().filter(|f| !names.contains(f)) {
        fs::remove_file(dir.join(&stale)).with_context(|| format!("removing {stale}"))?;
        println!("removed {stale} (no bundled extension names it)");
    }
    if prebuilt::sources_key(root)? != key {
        bail!("the sources changed during the build; run refresh again");
    }
    let record = Record { key, rustc };
    fs::write(dir.join(prebuilt::RECORD), record.render())?;
    println!(
        "{} components, {bytes} bytes, in {} (key {}, {})",
        names.len(),
        prebuilt::DIR,
        record.key,
        record.rustc
    );
    Ok(())
}

/// A key over files a clone does not have could never be checked: refresh
/// only a tree whose inputs are all in git.
fn not_in_git(root: &Path) -> Result<()> {
    let mut missing = Vec::new();
    for ignored in [false, true] {
        let mut cmd = Command::new("git");
        cmd.current_dir(root)
            .args(["ls-files", "--others", "--exclude-standard"]);
        if ignored {
            cmd.arg("--ignored");
        }
        let out = cmd
            .arg("--")
            .args(prebuilt::INPUTS)
            .output()
            .context("running git ls-files (refresh needs a git checkout)")?;
        if !out.status.success() {
            bail!(
                "git ls-files failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        missing.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| !l.starts_with("plugins/target/"))
                .map(str::to_string),
        );
    }
    if !missing.is_empty() {
        bail!(
            "files under the inputs are not in git, so a clone could not build the same components: add or remove them first:\n{}",
            missing.join("\n")
        );
    }
    Ok(())
}

fn verify(root: &Path) -> Result<()> {
    let record = Record::read(root).map_err(anyhow::Error::msg)?;
    let key = prebuilt::sources_key(root).context("reading the sources")?;
    if record.key != key {
        bail!(
            "{} was built from other sources than these (plugins/, sdk/ or wit/ changed): run `cargo run -p stud-prebuilt -- refresh` and commit the folder",
            prebuilt::DIR
        );
    }
    let rustc = rustc_version()?;
    if record.rustc != rustc {
        bail!(
            "the prebuilt components were built with `{}` and this is `{rustc}`: the same sources build to other bytes with another compiler, so they cannot be checked here (run with that compiler, e.g. `rustup run <version> cargo run -p stud-prebuilt -- verify`)",
            record.rustc
        );
    }
    let built = build(root)?;
    let names = component_names(root)?;
    let dir = root.join(prebuilt::DIR);
    let mut wrong = Vec::new();
    for name in &names {
        let path = dir.join(name);
        let regular = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
        let ours = if regular { fs::read(&path).ok() } else { None };
        let theirs =
            fs::read(built.join(name)).with_context(|| format!("reading the built {name}"))?;
        match ours {
            None => wrong.push(format!("{name}: not a regular file in {}", prebuilt::DIR)),
            Some(b) if b != theirs => wrong.push(format!(
                "{name}: {} bytes prebuilt, {} bytes built from source",
                b.len(),
                theirs.len()
            )),
            Some(_) => {}
        }
    }
    for extra in wasm_files(&dir)?.into_iter().filter(|f| !names.contains(f)) {
        wrong.push(format!("{extra}: no bundled extension names it"));
    }
    wrong.extend(read_outside_the_key(root, &built, &names)?);
    if !wrong.is_empty() {
        bail!(
            "the prebuilt components are not what plugins/ builds to:\n  {}",
            wrong.join("\n  ")
        );
    }
    println!(
        "{} prebuilt components are what plugins/ builds to ({})",
        names.len(),
        record.rustc
    );
    Ok(())
}

/// Every local source file the build read (cargo's dep-info beside each
/// component) must lie under an input of the key, or a change to it would
/// change the components unseen. The cargo home's unpacked registry and git
/// sources are pinned by the lockfile, which is an input; nothing else in
/// it is. A dep-info that names no source is an error, not a pass.
fn read_outside_the_key(root: &Path, built: &Path, names: &[String]) -> Result<Vec<String>> {
    let inputs = prebuilt::INPUTS
        .iter()
        .map(|i| root.join(i).canonicalize())
        .collect::<std::io::Result<Vec<_>>>()?;
    let target = built.canonicalize()?;
    let pinned: Vec<PathBuf> = wasm_build::cargo_home()
        .into_iter()
        .flat_map(|h| {
            [
                h.join("registry").join("src"),
                h.join("git").join("checkouts"),
            ]
        })
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let mut outside = Vec::new();
    for name in names {
        let dep_info = built.join(name.replace(".wasm", ".d"));
        let text = fs::read_to_string(&dep_info)
            .with_context(|| format!("reading {}", dep_info.display()))?;
        let sources =
            dep_info_sources(&text).with_context(|| format!("reading {}", dep_info.display()))?;
        for source in sources {
            let path = Path::new(&source)
                .canonicalize()
                .unwrap_or_else(|_| PathBuf::from(&source));
            let covered = path.starts_with(&target)
                || inputs.iter().any(|i| path.starts_with(i))
                || pinned.iter().any(|p| path.starts_with(p));
            if !covered {
                outside.push(format!(
                    "{name}: its build read {}, which the key does not cover (add it to INPUTS in {})",
                    path.display(),
                    "crates/stud-bundled/prebuilt.rs"
                ));
            }
        }
    }
    Ok(outside)
}

/// The files a make-style dep-info file names after its first `: `
/// (spaces in a path are escaped as `\ `); none is an error.
fn dep_info_sources(text: &str) -> Result<Vec<String>> {
    let Some((_, rest)) = text.split_once(": ") else {
        bail!("no `target: sources` line");
    };
    let rest = rest.lines().next().unwrap_or_default();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ' ' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.is_empty() {
        bail!("no source files named");
    }
    Ok(out)
}

/// Build `plugins/` into the same target dir the build script uses.
fn build(root: &Path) -> Result<PathBuf> {
    let target = root.join("target").join("wasm");
    wasm_build::ensure_wasm_target();
    wasm_build::build_workspace(root, &root.join("plugins"), &target, None)
        .map_err(anyhow::Error::msg)?;
    Ok(target.join(wasm_build::WASM_TARGET).join("release"))
}

/// The component file each bundled extension's manifest names.
fn component_names(root: &Path) -> Result<Vec<String>> {
    let plugins = root.join("plugins");
    prebuilt::plugin_dirs(&plugins)
        .with_context(|| format!("reading {}", plugins.display()))?
        .into_iter()
        .map(|(dir, manifest)| {
            prebuilt::component_file(&manifest)
                .with_context(|| format!("{}/extension.toml names no `component`", dir.display()))
        })
        .collect()
}

fn wasm_files(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".wasm") {
            names.push(name);
        }
    }
    Ok(names)
}

fn rustc_version() -> Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-V")
        .output()
        .with_context(|| format!("running {rustc} -V"))?;
    if !out.status.success() {
        bail!(
            "`{rustc} -V` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests;
