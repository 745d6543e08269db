//! Golden tests for manifest validation.
//!
//! Each folder `tests/golden/manifests/<case>/` holds an `extension.toml`
//! that must be rejected and `expected.txt`, the exact error text. A case
//! with a `generate` file instead of `extension.toml` gets its manifest
//! built here (so large hostile inputs are not committed). Folders under
//! `valid/` must parse. `UPDATE_GOLDEN=1` rewrites `expected.txt` files.

use std::fs;
use std::path::{Path, PathBuf};

use semver::Version;
use serde_json::json;
use stud::manifest::{
    DriftPolicy, FsAccess, FsDir, HookKind, HookSlot, Kind, MAX_MANIFEST_BYTES, MAX_PROBLEMS,
    Manifest, ManifestError, Phase, ReloadBehavior, SlotRule, Stage, parse_manifest, slot_allows,
};

const HOST_CONTRACT: Version = Version::new(0, 1, 0);

fn repo_root() -> PathBuf {
    // The test belongs to `host/`; the fixtures live at the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn golden_dir() -> PathBuf {
    repo_root().join("tests/golden/manifests")
}

fn parse(text: &str, case: &str) -> Result<Manifest, ManifestError> {
    parse_manifest(
        text,
        Path::new(&format!("{case}/extension.toml")),
        &HOST_CONTRACT,
    )
}

/// Trailing whitespace per line and at the end does not count.
fn normalize(text: &str) -> String {
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// The manifest text of a case: the file, or a generated one.
fn case_text(dir: &Path) -> String {
    let generate = dir.join("generate");
    if generate.exists() {
        let recipe = fs::read_to_string(&generate).unwrap_or_default();
        return generated(recipe.lines().next().unwrap_or_default().trim());
    }
    fs::read_to_string(dir.join("extension.toml"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// Worst-plausible inputs, built on demand.
fn generated(recipe: &str) -> String {
    match recipe {
        // Everything hostile at once, well over the size limit: it must be
        // refused before parsing.
        "oversized" => {
            let mut text = String::from("id = \"big\"\n__proto__ = 1\n");
            text.push_str(&format!("name = \"{}\"\n", "x".repeat(1 << 20)));
            text.push_str(&format!(
                "deep = {}{}\n",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ));
            text
        }
        other => panic!("unknown generate recipe {other:?}"),
    }
}

fn case_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "valid"))
        .collect();
    dirs.sort();
    dirs
}

fn case_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn invalid_manifests_match_golden_errors() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let dirs = case_dirs(&golden_dir());
    assert!(
        dirs.len() >= 18,
        "expected at least 18 golden cases, found {}",
        dirs.len()
    );
    let mut failures = Vec::new();
    for dir in &dirs {
        let case = case_name(dir);
        let actual = match parse(&case_text(dir), &case) {
            Ok(_) => {
                failures.push(format!("{case}: parsed, but it should have been rejected"));
                continue;
            }
            Err(e) => normalize(&e.to_string()),
        };
        let expected_file = dir.join("expected.txt");
        if update {
            fs::write(&expected_file, format!("{actual}\n"))
                .unwrap_or_else(|e| panic!("{}: {e}", expected_file.display()));
            continue;
        }
        let expected = normalize(&fs::read_to_string(&expected_file).unwrap_or_default());
        if actual != expected {
            failures.push(format!(
                "{case}:\n--- expected\n{expected}\n--- actual\n{actual}\n"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden mismatches (UPDATE_GOLDEN=1 rewrites them):\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn valid(case: &str) -> Manifest {
    let path = golden_dir().join("valid").join(case).join("extension.toml");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&text, case).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn valid_minimal_tool_gets_kind_defaults() {
    let m = valid("minimal-tool");
    assert_eq!(m.id.as_str(), "hello");
    assert_eq!(m.kind, Kind::Tool);
    assert_eq!(m.component, PathBuf::from("extension.wasm"));
    assert_eq!(m.reload, ReloadBehavior::BetweenTurns);
    assert_eq!((m.limits.memory_mib, m.limits.timeout_ms), (256, 120_000));
    // A tool's calls may run at once, on a pool of instances.
    assert_eq!(m.limits.instances, 4);
    assert_eq!(m.capabilities, Default::default());
    assert!(m.description.is_none() && m.config_schema.is_none() && m.state.is_none());
    assert!(m.hooks.is_empty() && m.dependencies.is_empty());
}

#[test]
fn valid_provider_with_network_and_secrets() {
    let m = valid("provider-network-secrets");
    assert_eq!(m.kind, Kind::Provider);
    assert_eq!(m.limits.timeout_ms, 300_000);
    let network: Vec<String> = m
        .capabilities
        .network
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        network,
        ["api.openai.com", "localhost:11434", "*.openai.azure.com"]
    );
    assert!(m.capabilities.network[2].matches("eu.openai.azure.com", 443));
    assert!(!m.capabilities.network[2].matches("openai.azure.com", 443));
    assert_eq!(
        m.capabilities.secrets,
        ["OPENAI_API_KEY", "AZURE_OPENAI_KEY"]
    );
    assert!(!m.capabilities.exec);
}

/// `[context] when-config` asks a context provider for fragments only
/// where its config key holds something; without the table it always is.
#[test]
fn context_when_config_takes_a_provider_part_only_where_its_key_is_configured() {
    let m = valid("context-when-config");
    let context = m.context.as_ref().expect("[context]");
    assert_eq!(context.when_config.as_deref(), Some("path"));
    for empty in [json!({}), json!({"path": ""}), json!({"path": null})] {
        assert!(!context.provides_with(&empty), "{empty}");
    }
    assert!(context.provides_with(&json!({"path": "PROMPT.md"})));
    assert_eq!(valid("minimal-tool").context, None);
}

/// `[context.when-project-has]` names what a context provider reads in
/// the project root; its config key's list replaces the names, and a
/// value the declaration does not describe makes them unknown (the
/// provider is then always asked).
#[test]
fn context_when_project_has_names_the_files_a_provider_reads() {
    use stud::manifest::Reads;
    let m = valid("context-project-files");
    let files = m
        .context
        .as_ref()
        .and_then(|c| c.when_project_has.as_ref())
        .expect("[context.when-project-has]");
    assert_eq!(files.files, ["RULES.md"]);
    assert_eq!(files.config.as_deref(), Some("files"));
    assert_eq!(
        files.reads_with(&json!({})),
        Reads::Names(vec!["RULES.md".into()])
    );
    assert_eq!(
        files.reads_with(&json!({"files": ["GUIDE.md"]})),
        Reads::Names(vec!["GUIDE.md".into()])
    );
    assert_eq!(
        files.reads_with(&json!({"files": ["../GUIDE.md"]})),
        Reads::Unknown
    );
    assert_eq!(
        valid("context-when-config")
            .context
            .and_then(|c| c.when_project_has),
        None
    );
}

/// `when-config` attaches a hook only where its config key holds
/// something; anything but a plainly empty value attaches it.
#[test]
fn when_config_attaches_a_hook_only_where_its_key_is_configured() {
    let m = valid("hook-when-config");
    let (gated, always) = (&m.hooks[0], &m.hooks[1]);
    assert_eq!(gated.when_config.as_deref(), Some("PreToolUse"));
    assert_eq!(always.when_config, None);
    for empty in [
        json!({}),
        json!({"PreToolUse": null}),
        json!({"PreToolUse": false}),
        json!({"PreToolUse": ""}),
        json!({"PreToolUse": []}),
        json!({"PreToolUse": {}}),
    ] {
        assert!(!gated.attaches_with(&empty), "{empty}");
        assert!(always.attaches_with(&empty), "{empty}");
    }
    for something in [
        json!({"PreToolUse": [{"matcher": "Bash"}]}),
        json!({"PreToolUse": {"Bash": []}}),
        json!({"PreToolUse": true}),
        json!({"PreToolUse": 0}),
        json!({"PreToolUse": "x"}),
    ] {
        assert!(gated.attaches_with(&something), "{something}");
    }
}

#[test]
fn valid_hook_with_three_registrations() {
    let m = valid("hook-three-registrations");
    assert_eq!(m.kind, Kind::Hook);
    assert_eq!(m.reload, ReloadBehavior::InTurn);
    assert_eq!(m.limits.timeout_ms, 2_000);
    assert_eq!(m.limits.instances, 1, "a hook keeps one instance");
    let hooks: Vec<(String, HookKind)> = m
        .hooks
        .iter()
        .map(|h| (h.slot.to_string(), h.kind))
        .collect();
    assert_eq!(
        hooks,
        [
            ("tool-call.pre".to_string(), HookKind::Guard),
            ("send-request.pre".to_string(), HookKind::Transform),
            ("render.post".to_string(), HookKind::Observer),
        ]
    );
    // The transform at send-request.pre is accepted but rare: callers warn.
    assert_eq!(
        slot_allows(m.hooks[1].slot, m.hooks[1].kind),
        SlotRule::Rare
    );
    assert_eq!(
        m.hooks[1].slot,
        HookSlot {
            stage: Stage::SendRequest,
            phase: Phase::Pre
        }
    );
}

#[test]
fn valid_tool_with_everything() {
    let m = valid("tool-everything");
    assert_eq!(m.name, "Project search");
    assert_eq!(m.version, Version::new(1, 2, 3));
    assert_eq!(m.contract.to_string(), ">=0.1.0, <0.3.0");
    assert_eq!(m.component, PathBuf::from("bin/search.wasm"));
    assert_eq!(m.reload, ReloadBehavior::InTurn);
    assert_eq!((m.limits.memory_mib, m.limits.timeout_ms), (512, 30_000));
    let fs: Vec<(FsDir, FsAccess)> = m
        .capabilities
        .filesystem
        .iter()
        .map(|f| (f.dir, f.access))
        .collect();
    assert_eq!(
        fs,
        [
            (FsDir::Project, FsAccess::Read),
            (FsDir::Data, FsAccess::ReadWrite)
        ]
    );
    assert_eq!(m.capabilities.network.len(), 1);
    assert!(m.capabilities.exec);
    let schema = m
        .config_schema
        .as_ref()
        .and_then(|s| s.get("additionalProperties"));
    assert_eq!(schema, Some(&serde_json::Value::Bool(false)));
    let state = m
        .state
        .as_ref()
        .map(|s| (s.version.to_string(), s.drift, s.schema.is_some()));
    assert_eq!(
        state,
        Some(("2.0.0".to_string(), DriftPolicy::Migrate, true))
    );
    let deps: Vec<String> = m
        .dependencies
        .iter()
        .map(|d| format!("{} {}", d.id, d.version))
        .collect();
    assert_eq!(deps, ["index >=1.0.0, <2.0.0", "protect-paths ^0.1"]);
}

/// The manifests that ship must stay valid.
#[test]
fn bundled_and_fixture_manifests_parse() {
    let mut seen = 0;
    for parent in ["plugins", "tests/fixtures"] {
        let Ok(entries) = fs::read_dir(repo_root().join(parent)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path().join("extension.toml");
            if let Ok(text) = fs::read_to_string(&path) {
                parse_manifest(&text, &path, &stud::contract::HOST_CONTRACT)
                    .unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no bundled manifests found");
}

/// The manifests built into the binary are read at start without
/// compiling their schemas (`parse_bundled_manifest`), and a bundled
/// extension without settings runs on `{}` without validating it: both
/// rest on what this checks, in full, for every one of them.
#[test]
fn bundled_schemas_compile_and_accept_an_empty_config() {
    for b in stud::bundled::BUNDLED {
        let path = Path::new(b.dir).join("extension.toml");
        let full = parse_manifest(b.manifest, &path, &stud::contract::HOST_CONTRACT)
            .unwrap_or_else(|e| panic!("{e}"));
        let fast = stud::manifest::parse_bundled_manifest(
            b.manifest,
            &path,
            &stud::contract::HOST_CONTRACT,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(full, fast, "{}", b.dir);
        // What a start reads in place of the TOML: the build's parse of it.
        let built = stud_bundled_manifests::parsed_manifest(b.id)
            .unwrap_or_else(|| panic!("{}: the build recorded no parsed manifest", b.dir));
        let built: stud::manifest::Manifest =
            serde_json::from_str(built).unwrap_or_else(|e| panic!("{}: {e}", b.dir));
        assert_eq!(full, built, "{}", b.dir);
        // The id build.rs read without a TOML parser is the reserved one.
        assert_eq!(full.id.as_str(), b.id, "{}", b.dir);
        if let Some(schema) = &full.config_schema {
            let validator = jsonschema::validator_for(schema)
                .unwrap_or_else(|e| panic!("{}: config schema: {e}", b.dir));
            assert!(
                validator.is_valid(&serde_json::json!({})),
                "{}: its config schema must accept {{}} (it runs on that without settings)",
                b.dir
            );
        }
        if let Some(schema) = full.state.as_ref().and_then(|s| s.schema.as_ref()) {
            jsonschema::validator_for(schema)
                .unwrap_or_else(|e| panic!("{}: state schema: {e}", b.dir));
        }
    }
}

#[test]
fn hostile_inputs_are_problems_not_panics() {
    let just_under = format!(
        "id = \"x\"\nname = \"{}\"\n",
        "n".repeat(MAX_MANIFEST_BYTES - 64)
    );
    let deep_tables = format!("x = {}1{}\n", "{ a = ".repeat(5_000), " }".repeat(5_000));
    let deep_keys = format!("{} = 1\n", vec!["a"; 5_000].join("."));
    let proto =
        "__proto__ = 1\nconstructor = { prototype = 2 }\n[capabilities]\n__proto__ = true\n"
            .to_string();
    let many = format!(
        "[capabilities]\nsecrets = [{}]\n",
        vec!["\"bad\""; 20_000].join(",")
    );
    let nul = "id = \"a\u{0}b\"\nname = \"\u{1b}[31mred\"\n".to_string();
    for text in [just_under, deep_tables, deep_keys, proto, many, nul] {
        let err = match parse(&text, "hostile") {
            Ok(m) => panic!("accepted {m:?}"),
            Err(e) => e,
        };
        assert!(!err.problems.is_empty() && err.problems.len() <= MAX_PROBLEMS + 1);
        let shown = err.to_string();
        assert!(
            shown.len() < 64 * 1024,
            "error text is {} bytes",
            shown.len()
        );
        assert!(
            !shown.contains('\u{0}') && !shown.contains('\u{1b}'),
            "control characters reach the terminal: {shown}"
        );
    }
}

#[test]
fn problems_are_deterministic_and_complete() {
    let text = "kind = \"toolz\"\nversion = \"1.0\"\nzzz = 1\naaa = 2\n[limits]\nmemory-mib = 0\ntimeout-ms = 0\n";
    let first = parse(text, "x").err().map(|e| e.to_string());
    for _ in 0..5 {
        assert_eq!(parse(text, "x").err().map(|e| e.to_string()), first);
    }
    let fields: Vec<String> = parse(text, "x")
        .err()
        .map(|e| e.problems.into_iter().map(|p| p.field).collect())
        .unwrap_or_default();
    assert_eq!(
        fields,
        [
            "id",
            "name",
            "version",
            "kind",
            "contract",
            "limits.memory-mib",
            "limits.timeout-ms",
            "aaa",
            "zzz"
        ]
    );
}
