//! The top-level walk over `extension.toml`: size check, TOML parse, then
//! every field in a fixed order (required fields first), collecting all
//! problems before deciding.

use std::path::Path;

use semver::Version;
use toml::Table;

use super::capabilities::read_capabilities;
use super::command::read_command;
use super::component::{DEFAULT_COMPONENT, parse_component};
use super::config::read_config;
use super::context::read_context;
use super::dependencies::read_dependencies;
use super::fields::{Fields, unknown_key_message};
use super::hooks::read_hooks;
use super::id::ExtensionId;
use super::kind::{Kind, ReloadBehavior};
use super::limits::read_limits;
use super::problems::{ManifestError, Problem, Problems, quote};
use super::schema::SchemaCheck;
use super::state::read_state;
use super::versions::{contract_mismatch, parse_requirement, parse_version};
use super::{Manifest, capabilities, config, limits, state};

/// Refused before parsing: real manifests are a few KiB, and the limit
/// bounds the work a hostile file can cause.
pub const MAX_MANIFEST_BYTES: usize = 256 * 1024;
pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 2000;

const TOP_KNOWN: &[&str] = &[
    "id",
    "name",
    "version",
    "kind",
    "contract",
    "description",
    "component",
    "reload",
    "limits",
    "capabilities",
    "config",
    "state",
    "hooks",
    "dependencies",
    "command",
    "context",
];

/// Parses and fully validates a manifest. `file` is only used in the
/// error; `host_contract` is the `stud:extension` version this host
/// implements.
pub fn parse_manifest(
    text: &str,
    file: &Path,
    host_contract: &Version,
) -> Result<Manifest, ManifestError> {
    parse_manifest_with(text, file, host_contract, SchemaCheck::Compile)
}

/// [`parse_manifest`] for a manifest built into the binary: its schemas
/// are compiled when first used (compiling them is most of the cost of
/// reading all the bundled manifests at every start), and in full by the
/// golden-manifest test.
pub fn parse_bundled_manifest(
    text: &str,
    file: &Path,
    host_contract: &Version,
) -> Result<Manifest, ManifestError> {
    parse_manifest_with(text, file, host_contract, SchemaCheck::Defer)
}

fn parse_manifest_with(
    text: &str,
    file: &Path,
    host_contract: &Version,
    check: SchemaCheck,
) -> Result<Manifest, ManifestError> {
    let fail = |problems| ManifestError {
        file: file.to_path_buf(),
        problems,
    };
    if text.len() > MAX_MANIFEST_BYTES {
        let message = format!(
            "the manifest is {} bytes, over the limit of {MAX_MANIFEST_BYTES} bytes (256 KiB); keep large data such as prompts or scripts in separate files",
            text.len()
        );
        return Err(fail(vec![Problem::new("(file)", message)]));
    }
    let table = toml::from_str::<Table>(text).map_err(|e| fail(vec![syntax_problem(text, &e)]))?;
    let mut p = Problems::default();
    match read(&table, host_contract, check, &mut p) {
        Some(manifest) if p.is_empty() => Ok(manifest),
        _ if p.is_empty() => Err(fail(vec![Problem::new(
            "(internal)",
            "validation failed without a reason; please report this",
        )])),
        _ => Err(fail(p.into_vec())),
    }
}

/// A TOML error as one problem with a position: toml's own rendering is
/// a multi-line source excerpt that does not fit a bullet list.
fn syntax_problem(text: &str, error: &toml::de::Error) -> Problem {
    let message = error
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let position = error
        .span()
        .and_then(|span| text.get(..span.start))
        .map(|before| {
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: ")
        });
    Problem::new(
        "(syntax)",
        format!(
            "{}{message}; fix the TOML syntax",
            position.unwrap_or_default()
        ),
    )
}

fn read(
    table: &Table,
    host_contract: &Version,
    check: SchemaCheck,
    p: &mut Problems,
) -> Option<Manifest> {
    let top = Fields::new(table, "");
    let id = read_id(&top, p);
    let name = read_name(&top, p);
    let version = top
        .required_string("version", "version = \"0.1.0\"", p)
        .and_then(|text| {
            parse_version(text, "version")
                .map_err(|m| p.push("version", m))
                .ok()
        });
    let kind = top
        .required_string("kind", "kind = \"tool\"", p)
        .and_then(|text| {
            text.parse::<Kind>()
                .map_err(|e| p.push("kind", e.to_string()))
                .ok()
        });
    let contract = read_contract(&top, host_contract, p);
    let description = read_description(&top, p);
    let component = match top.get("component") {
        None => Some(DEFAULT_COMPONENT.into()),
        Some(_) => top
            .string("component", "component = \"extension.wasm\"", p)
            .and_then(|text| {
                parse_component(text)
                    .map_err(|m| p.push("component", m))
                    .ok()
            }),
    };
    let reload = match top.get("reload") {
        None => Some(kind.map_or(ReloadBehavior::BetweenTurns, Kind::default_reload)),
        Some(_) => top
            .string("reload", "reload = \"between-turns\"", p)
            .and_then(|text| {
                text.parse::<ReloadBehavior>()
                    .map_err(|e| p.push("reload", e.to_string()))
                    .ok()
            }),
    };
    let limits = read_limits(
        sub(&top, "limits", "[limits] with memory-mib = 256", p),
        kind,
        p,
    );
    let capabilities = read_capabilities(
        sub(&top, "capabilities", "[capabilities] with exec = true", p),
        kind,
        p,
    );
    let config_schema = read_config(
        sub(
            &top,
            "config",
            "[config] with schema = { type = \"object\" ... }",
            p,
        ),
        check,
        p,
    );
    let state = read_state(
        sub(&top, "state", "[state] with version = \"1.0.0\"", p),
        check,
        p,
    );
    let hooks = read_hooks(&top, kind, config_schema.as_ref(), p);
    let command = read_command(
        &top,
        kind,
        description.as_deref().is_some_and(|d| !d.trim().is_empty()),
        p,
    );
    let context = read_context(&top, kind, config_schema.as_ref(), p);
    let reads_project = capabilities
        .filesystem
        .iter()
        .any(|f| f.dir == capabilities::FsDir::Project);
    if context
        .as_ref()
        .is_some_and(|c| c.when_project_has.is_some())
        && !reads_project
    {
        p.push(
            "context.when-project-has",
            "names files in the project root, but the extension has no project grant to read them through (so it would always be asked); add filesystem = [{ dir = \"project\", access = \"read\" }] to [capabilities], or remove the table".to_string(),
        );
    }
    let dependencies = read_dependencies(
        sub(
            &top,
            "dependencies",
            "[dependencies] with other-id = \"^0.1\"",
            p,
        ),
        id.as_ref(),
        p,
    );
    for key in top.unknown(TOP_KNOWN) {
        p.push(
            top.path(key),
            misplaced(key).unwrap_or_else(|| unknown_key_message(key, TOP_KNOWN)),
        );
    }
    Some(Manifest {
        id: id?,
        name: name?,
        version: version?,
        kind: kind?,
        contract: contract?,
        description,
        component: component?,
        reload: reload?,
        limits,
        capabilities,
        config_schema,
        state,
        hooks,
        dependencies,
        command,
        context,
    })
}

/// A sub-table as [`Fields`] with its own path; `None` if absent or not a
/// table (the latter is reported).
fn sub<'a>(top: &Fields<'a>, key: &str, example: &str, p: &mut Problems) -> Option<Fields<'a>> {
    top.table(key, example, p).map(|t| Fields::new(t, key))
}

/// Keys of a sub-table written at the top level are a common slip.
fn misplaced(key: &str) -> Option<String> {
    let table = if limits::KNOWN.contains(&key) {
        "[limits]"
    } else if capabilities::KNOWN.contains(&key) {
        "[capabilities]"
    } else if key == "slot" {
        "[[hooks]]"
    } else if key == "when-config" {
        "[[hooks]] (a hook) or [context] (a context provider)"
    } else if config::KNOWN.contains(&key) || state::KNOWN.contains(&key) {
        "[config] or [state]"
    } else {
        return None;
    };
    Some(format!(
        "unknown top-level key; `{key}` belongs in {table}: move it below that table header"
    ))
}

fn read_id(top: &Fields<'_>, p: &mut Problems) -> Option<ExtensionId> {
    let text = top.required_string("id", "id = \"my-extension\"", p)?;
    text.parse::<ExtensionId>()
        .map_err(|e| {
            let example = ExtensionId::suggest(text).map_or_else(|| "my-extension".to_string(), String::from);
            p.push("id", format!("{e}; write lowercase letters, digits and single dashes, starting with a letter, e.g. id = \"{example}\""));
        })
        .ok()
}

fn read_name(top: &Fields<'_>, p: &mut Problems) -> Option<String> {
    let text = top.required_string("name", "name = \"Read file\"", p)?;
    let problem = if text.trim().is_empty() {
        Some("is empty; write a short human-readable name, e.g. name = \"Read file\"".to_string())
    } else if text.chars().count() > MAX_NAME_CHARS {
        Some(format!(
            "is longer than {MAX_NAME_CHARS} characters; keep the name short and put details in description"
        ))
    } else if text.chars().any(char::is_control) {
        Some(format!(
            "{} contains a line break or control character; write the name on one line",
            quote(text)
        ))
    } else {
        None
    };
    match problem {
        Some(message) => {
            p.push("name", message);
            None
        }
        None => Some(text.to_string()),
    }
}

fn read_contract(top: &Fields<'_>, host: &Version, p: &mut Problems) -> Option<semver::VersionReq> {
    let series = if host.major > 0 {
        format!("^{}", host.major)
    } else {
        format!("^0.{}", host.minor)
    };
    let text = top.required_string("contract", &format!("contract = \"{series}\""), p)?;
    let req = parse_requirement(text, "contract", &series)
        .map_err(|m| p.push("contract", m))
        .ok()?;
    match contract_mismatch(&req, host) {
        Some(message) => {
            p.push("contract", message);
            None
        }
        None => Some(req),
    }
}

fn read_description(top: &Fields<'_>, p: &mut Problems) -> Option<String> {
    let text = top.string(
        "description",
        "description = \"What it does, in a sentence.\"",
        p,
    )?;
    if text.chars().count() > MAX_DESCRIPTION_CHARS {
        p.push("description", format!("is longer than {MAX_DESCRIPTION_CHARS} characters; shorten it and link to documentation instead"));
        return None;
    }
    Some(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: Version = Version::new(0, 1, 0);
    const MINIMAL: &str =
        "id = \"a\"\nname = \"A\"\nversion = \"0.1.0\"\nkind = \"tool\"\ncontract = \"^0.1\"\n";

    fn fields_of(text: &str) -> Vec<String> {
        match parse_manifest(text, Path::new("t/extension.toml"), &HOST) {
            Ok(_) => Vec::new(),
            Err(e) => e.problems.into_iter().map(|p| p.field).collect(),
        }
    }

    #[test]
    fn size_limit_is_checked_before_parsing() {
        let padded = |len: usize| format!("{MINIMAL}#{}", "x".repeat(len - MINIMAL.len() - 1));
        assert_eq!(fields_of(&padded(MAX_MANIFEST_BYTES)), Vec::<String>::new());
        assert_eq!(fields_of(&padded(MAX_MANIFEST_BYTES + 1)), ["(file)"]);
    }

    #[test]
    fn syntax_position_counts_characters() {
        let err = parse_manifest("id = \"é\"\nname = \"ü\" x\n", Path::new("t"), &HOST).err();
        let message = err
            .and_then(|e| e.problems.into_iter().next())
            .map(|p| p.message)
            .unwrap_or_default();
        assert!(message.starts_with("line 2, column 12: "), "{message}");
    }

    #[test]
    fn byte_order_mark_and_crlf_are_accepted() {
        assert_eq!(
            fields_of(&format!("\u{feff}{}", MINIMAL.replace('\n', "\r\n"))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn kind_defaults_are_filled_in() {
        let text = MINIMAL.replace("\"tool\"", "\"session-store\"");
        let manifest = parse_manifest(&text, Path::new("t"), &HOST).map_err(|e| e.to_string());
        let got = manifest.map(|m| (m.reload, m.limits.timeout_ms, m.limits.memory_mib));
        assert_eq!(got, Ok((ReloadBehavior::Never, 10_000, 256)));
    }
}
