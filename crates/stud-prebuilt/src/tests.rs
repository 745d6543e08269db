use super::*;
use prebuilt::{Source, choose, sources_key};

/// The check a contributor meets first: a change to `plugins/`, `sdk/` or
/// `wit/` without a refresh would ship components built from other
/// sources, so it fails here, before CI's full rebuild.
#[test]
fn the_prebuilt_components_were_made_from_these_sources() {
    let root = repo_root();
    let record = Record::read(&root).expect("the prebuilt folder's record");
    let key = sources_key(&root).expect("the sources' key");
    assert_eq!(
        record.key,
        key,
        "plugins/, sdk/ or wit/ changed since {} was made: run `cargo run -p stud-prebuilt -- refresh` and commit the folder",
        prebuilt::DIR
    );
}

#[test]
fn every_bundled_extension_has_its_prebuilt_component_and_nothing_else_is_there() {
    let root = repo_root();
    let mut names = component_names(&root).unwrap();
    let mut present = wasm_files(&root.join(prebuilt::DIR)).unwrap();
    names.sort();
    present.sort();
    assert_eq!(present, names);
}

/// A tree with one file under each input, and one outside them.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for input in prebuilt::INPUTS {
        let path = dir.path().join(input);
        if input.ends_with(".toml") || input.ends_with(".rs") {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "x").unwrap();
        } else {
            fs::create_dir_all(path.join("src")).unwrap();
            fs::write(path.join("src/lib.rs"), "fn a() {}").unwrap();
        }
    }
    fs::create_dir_all(dir.path().join("docs")).unwrap();
    fs::write(dir.path().join("docs/readme.md"), "words").unwrap();
    dir
}

#[test]
fn the_key_changes_with_every_input_file() {
    let dir = tree();
    let root = dir.path();
    let before = sources_key(root).unwrap();
    assert_eq!(sources_key(root).unwrap(), before, "stable");
    for input in prebuilt::INPUTS {
        let file = if input.ends_with(".toml") || input.ends_with(".rs") {
            root.join(input)
        } else {
            root.join(input).join("src/lib.rs")
        };
        let old = fs::read(&file).unwrap();
        fs::write(&file, [old.as_slice(), b" "].concat()).unwrap();
        assert_ne!(sources_key(root).unwrap(), before, "{input}");
        fs::write(&file, &old).unwrap();
    }
    assert_eq!(sources_key(root).unwrap(), before);
}

#[test]
fn the_key_sees_new_and_renamed_files_but_not_target_folders_or_other_folders() {
    let dir = tree();
    let root = dir.path();
    let before = sources_key(root).unwrap();

    fs::create_dir_all(root.join("plugins/target/release")).unwrap();
    fs::write(root.join("plugins/target/release/a.wasm"), "built").unwrap();
    fs::write(root.join("docs/readme.md"), "changed").unwrap();
    assert_eq!(sources_key(root).unwrap(), before);

    fs::create_dir_all(root.join("sdk/src/target")).unwrap();
    fs::write(root.join("sdk/src/target/mod.rs"), "").unwrap();
    assert_ne!(
        sources_key(root).unwrap(),
        before,
        "only plugins/target is skipped"
    );
    fs::remove_dir_all(root.join("sdk/src/target")).unwrap();

    fs::write(root.join("plugins/src/new.rs"), "").unwrap();
    let with_new = sources_key(root).unwrap();
    assert_ne!(with_new, before, "a new file, even empty");

    fs::rename(
        root.join("plugins/src/new.rs"),
        root.join("plugins/src/other.rs"),
    )
    .unwrap();
    assert_ne!(sources_key(root).unwrap(), with_new, "a renamed file");
}

#[test]
fn a_missing_input_is_an_error_that_names_it() {
    let dir = tree();
    fs::remove_dir_all(dir.path().join("wit")).unwrap();
    let err = sources_key(dir.path()).unwrap_err().to_string();
    assert!(err.contains("wit"), "{err}");
}

#[test]
fn a_link_is_hashed_as_a_link_and_may_only_point_inside_the_inputs() {
    let dir = tree();
    let root = dir.path();
    std::os::unix::fs::symlink("../sdk", root.join("plugins/.sdk")).unwrap();
    let linked = sources_key(root).unwrap();

    // The same text in a file is another input.
    fs::remove_file(root.join("plugins/.sdk")).unwrap();
    fs::write(root.join("plugins/.sdk"), "../sdk").unwrap();
    assert_ne!(sources_key(root).unwrap(), linked);
    fs::remove_file(root.join("plugins/.sdk")).unwrap();

    // A link out of the inputs would let the build read what the key never
    // saw.
    std::os::unix::fs::symlink("../docs", root.join("plugins/.docs")).unwrap();
    let err = sources_key(root).unwrap_err().to_string();
    assert!(
        err.contains("plugins/.docs") && err.contains("outside"),
        "{err}"
    );
}

#[test]
fn dep_info_names_each_source_with_escaped_spaces() {
    let text = "/t/stud_grep.wasm: /r/plugins/grep/src/lib.rs /r/my\\ dir/a.rs\n\n/r/plugins/grep/src/lib.rs:\n";
    assert_eq!(
        dep_info_sources(text).unwrap(),
        vec!["/r/plugins/grep/src/lib.rs", "/r/my dir/a.rs"]
    );
    assert!(dep_info_sources("/t/stud_grep.wasm:\n").is_err());
    assert!(dep_info_sources("").is_err());
}

#[test]
fn only_a_record_of_these_sources_chooses_the_prebuilt_components() {
    let record = Record {
        key: "k1".into(),
        rustc: "rustc 1".into(),
    };
    assert_eq!(choose(Some(&record), "k1", false), Source::Prebuilt);
    assert_eq!(choose(Some(&record), "k2", false), Source::FromSource);
    assert_eq!(choose(None, "k1", false), Source::FromSource);
    assert_eq!(choose(Some(&record), "k1", true), Source::FromSource);
}

#[test]
fn a_record_reads_back_what_it_wrote_and_names_what_it_lacks() {
    let record = Record {
        key: "ab12".into(),
        rustc: "rustc 1.95.0 (59807616e 2026-04-14)".into(),
    };
    assert_eq!(Record::parse(&record.render()), Ok(record));
    assert_eq!(Record::parse("rustc 1\n"), Err("no `key` line".into()));
    assert_eq!(Record::parse("key k\n"), Err("no `rustc` line".into()));
    assert!(Record::parse("key k\nrustc 1\nsha 3\n").is_err());
}

#[test]
fn a_build_that_read_a_file_outside_the_inputs_is_named() {
    let dir = tree();
    let root = dir.path();
    let built = root.join("target/wasm/wasm32-wasip2/release");
    fs::create_dir_all(&built).unwrap();
    let inside = root.join("plugins/src/lib.rs");
    let outside = root.join("docs/readme.md");
    fs::write(
        built.join("stud_x.d"),
        format!(
            "{}: {} {} {}\n",
            built.join("stud_x.wasm").display(),
            inside.display(),
            built.join("build/out.rs").display(),
            outside.display()
        ),
    )
    .unwrap();
    let found = read_outside_the_key(root, &built, &["stud_x.wasm".to_string()]).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("docs/readme.md"), "{found:?}");

    fs::write(
        built.join("stud_x.d"),
        format!(
            "{}: {}\n",
            built.join("stud_x.wasm").display(),
            inside.display()
        ),
    )
    .unwrap();
    assert!(
        read_outside_the_key(root, &built, &["stud_x.wasm".to_string()])
            .unwrap()
            .is_empty()
    );
}
