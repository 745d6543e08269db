//! `stud ext ...`: list and check extensions.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::config::Settings;
use crate::digest::Sha256Digest;
use crate::extensions::UserGrants;
use crate::extensions::consent::describe;
use crate::extensions::index;
use crate::extensions::install::{
    Consent, InstallError, InstallOptions, Outcome, Signatures, Source, install, remove,
};
use crate::extensions::lockfile::{IndexOrigin, Lockfile};
use crate::extensions::registry::project_dir;
use crate::extensions::trust::{Decision, TrustStore, recorded_scope};
use crate::extensions::{Discovered, Discovery, ProjectScope, Registry, Scope};
use crate::manifest::{Capabilities, FsAccess, FsDir, Kind};
use crate::paths::StudHome;
use crate::runtime::inspect::ComponentInfo;
use crate::runtime::services::StderrServices;
use crate::runtime::{Extension, Runtime, RuntimeOptions};

#[derive(Subcommand)]
pub enum ExtCommand {
    /// List discovered extensions: id, kind, version, contract, scope,
    /// sha256 and capabilities.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Load, compile (or load from the cache) and start every extension,
    /// and report what happened to each.
    Check {
        /// Only these extensions (ids); all of them when none is given.
        ids: Vec<String>,
        #[arg(long)]
        json: bool,
        /// Compile everything, ignoring the compile cache.
        #[arg(long)]
        no_cache: bool,
    },
    /// Install from a folder, a .tar.gz or an https:// (or
    /// http://127.0.0.1) URL of one, or by name from the configured
    /// indexes (`NAME` or `NAME@RANGE`, e.g. `shout@^1`): validate, show
    /// what it may do, ask, store it by content and pin its digests in
    /// extensions.lock.
    Install {
        source: String,
        #[arg(long, value_enum, default_value = "global")]
        scope: InstallScope,
        /// Consent on the command line (no prompt).
        #[arg(long, short = 'y')]
        yes: bool,
        /// The archive must have this sha256.
        #[arg(long)]
        sha256: Option<String>,
        /// The archive's minisign signature (default: `<archive>.minisig`
        /// beside it, when there is one).
        #[arg(long)]
        signature: Option<std::path::PathBuf>,
        /// Replace an installed extension even when its signer changes
        /// (another publisher's key, or unsigned); `--yes` does not.
        #[arg(long)]
        allow_signer_change: bool,
    },
    /// Search the configured extension indexes (`extensionIndexes`) by id,
    /// name or description; offline, their last fetched copies.
    Search { text: String },
    /// Which extensions installed from an index have newer versions: inside
    /// the range they were installed with, the latest, and those that need
    /// a newer stud.
    Outdated {
        #[arg(long, value_enum, default_value = "global")]
        scope: InstallScope,
    },
    /// Update extensions installed from an index (all, or ID) to the newest
    /// version inside their range; asks again when one wants more.
    Update {
        id: Option<String>,
        #[arg(long, value_enum, default_value = "global")]
        scope: InstallScope,
        /// Consent on the command line (no prompt).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Take a new version even when its signer is not the pinned one
        /// (another publisher's key, or unsigned); `--yes` does not.
        #[arg(long)]
        allow_signer_change: bool,
    },
    /// Uninstall an extension from a scope.
    Remove {
        id: String,
        #[arg(long, value_enum, default_value = "global")]
        scope: InstallScope,
    },
    /// Re-hash every installed extension and report each mismatch with
    /// extensions.lock (exit 1 if any).
    Verify,
    /// Everything about one extension: manifest, scope, digests, what it
    /// may do.
    Info { id: String },
    /// Pack an extension folder (or a crate whose component is built) into
    /// a reproducible .tar.gz and print its sha256: the same files give
    /// the same bytes.
    Pack {
        /// The extension's folder (default: the current one).
        dir: Option<std::path::PathBuf>,
        /// Where to write it (default: `<id>-<version>.tar.gz` here).
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
        /// Sign it with this minisign secret key (writes `<archive>.minisig`).
        #[arg(long)]
        key: Option<std::path::PathBuf>,
    },
    /// Make a crate for a new extension in ./NAME: the SDK dependency (the
    /// SDK of this stud, unpacked into ~/.stud/sdk), a working
    /// implementation of the kind, extension.toml, a README and a test.
    New {
        /// The extension's id, crate name and (tools, commands) the name it
        /// is called by.
        name: String,
        /// provider, tool, hook, ui, logger, context-provider,
        /// state-machine, command or session-store.
        #[arg(long, default_value = "tool")]
        kind: Kind,
    },
    /// Build the crate for wasm32-wasip2 (installing the target if
    /// missing), put the component where extension.toml says, run the
    /// load checks and show its size, digest and what users will be asked.
    Build {
        /// The crate's folder (default: the current one).
        dir: Option<std::path::PathBuf>,
    },
    /// Link a folder (an extension, or a crate: built first) as a
    /// development extension: used from where it is, never pinned, shown
    /// as `dev` in `ext list`; each `stud ext build` there is reloaded by
    /// running sessions.
    Dev {
        /// The folder (default: the current one).
        dir: Option<std::path::PathBuf>,
        /// Unlink it (a folder or an id) instead; the folder is left alone.
        #[arg(long)]
        remove: bool,
    },
    /// Make a minisign key pair for signing extensions (`stud.pub` and
    /// `stud.key`; encrypted when STUD_SIGNING_PASSWORD is set).
    Keygen {
        /// The folder to write them to (default: `~/.stud/keys`).
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
    },
    /// Sign a file (an archive from `stud ext pack`) with a minisign secret
    /// key; writes `<file>.minisig`.
    Sign {
        file: std::path::PathBuf,
        /// The secret key (default: `~/.stud/keys/stud.key`).
        #[arg(long)]
        key: Option<std::path::PathBuf>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InstallScope {
    Global,
    Project,
}

/// Answers install prompts from stdin (a terminal or a pipe); end of input
/// means no.
struct StdinConsent;

impl Consent for StdinConsent {
    fn ask(&mut self, question: &str) -> bool {
        errout!("{question}Proceed? [y/N] ");
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(n) if n > 0 => matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"),
            _ => false,
        }
    }

    fn interactive(&self) -> bool {
        use std::io::IsTerminal as _;
        std::io::stdin().is_terminal()
    }
}

/// The folder of a scope: `~/.stud` or a trusted `<cwd>/.stud`.
fn scope_root(
    home: &StudHome,
    cwd: &std::path::Path,
    scope: InstallScope,
) -> anyhow::Result<(Scope, std::path::PathBuf)> {
    match scope {
        InstallScope::Global => Ok((Scope::Global, home.root().to_path_buf())),
        InstallScope::Project => match recorded_scope(home.root(), cwd) {
            ProjectScope::Trusted(root) => Ok((Scope::Project, root)),
            ProjectScope::Untrusted(root) => anyhow::bail!(
                "{} is not trusted; trust the project first with `stud trust grant`",
                root.display()
            ),
            ProjectScope::Changed(root) => anyhow::bail!(
                "what {} may do changed since you trusted it; review and accept it first with `stud trust grant`",
                root.display()
            ),
            ProjectScope::None => {
                let root = cwd.join(".stud");
                anyhow::bail!(
                    "{} does not exist; create it and trust it (`stud trust grant`) before installing into the project",
                    root.display()
                )
            }
        },
    }
}

async fn install_cmd(
    home: StudHome,
    cwd: std::path::PathBuf,
    text: String,
    scope: InstallScope,
    yes: bool,
    (sha256, signature): (Option<String>, Option<std::path::PathBuf>),
    allow_signer_change: bool,
) -> anyhow::Result<ExitCode> {
    let (scope, root) = scope_root(&home, &cwd, scope)?;
    // Whose signatures count, and which indexes, is the user's own
    // decision: global settings.
    let global = Settings::load(&home.settings_file())?;
    let mut opts = InstallOptions {
        scope,
        root,
        yes,
        expected_sha256: sha256,
        signatures: Signatures {
            publishers: global.trusted_publishers.clone(),
            policy: global.signature_policy,
            file: signature,
            inline: None,
        },
        origin: None,
        expect: None,
        allow_signer_change,
    };
    let source = match Source::parse(&text) {
        Ok(source) => source,
        Err(not_a_path) => match index::parse_ref(&text) {
            Some((id, range)) if !cwd.join(&text).exists() => {
                let fetched = index::fetch_all(home.root(), &global.extension_indexes).await?;
                note_unreachable(&fetched);
                let c = index::resolve(&fetched, id.as_str(), &index::parse_range(range)?)?;
                outln!(
                    "`{id}`{}: {} from {}",
                    range.map(|r| format!("@{r}")).unwrap_or_default(),
                    c.version.version,
                    c.index
                );
                if let Some(given) = opts.expected_sha256.as_deref()
                    && !given.eq_ignore_ascii_case(&c.version.sha256)
                {
                    anyhow::bail!(
                        "--sha256 {given} is not what {} lists for `{id}` {} ({}); nothing was installed",
                        c.index,
                        c.version.version,
                        c.version.sha256
                    );
                }
                opts.expected_sha256 = Some(c.version.sha256.clone());
                opts.signatures.inline = c.signature().await?;
                opts.origin = Some(IndexOrigin {
                    url: c.index.to_string(),
                    range: range.unwrap_or("*").to_string(),
                });
                opts.expect = Some((id.to_string(), c.version.version.to_string()));
                Source::Url(c.archive_url()?)
            }
            _ => return Err(not_a_path.into()),
        },
    };
    run_install(&home, &source, &opts).await
}

/// Install `source` with `opts` and say what happened.
async fn run_install(
    home: &StudHome,
    source: &Source,
    opts: &InstallOptions,
) -> anyhow::Result<ExitCode> {
    let runtime = Runtime::new(RuntimeOptions {
        cache: Some(home.compile_cache()),
        pooling: false,
    })?;
    let report = match install(source, opts, &runtime, &mut StdinConsent).await {
        Ok(r) => r,
        Err(e @ InstallError::Declined { .. }) => {
            errln!("{e}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let what = match &report.outcome {
        Outcome::Installed => "installed".to_string(),
        Outcome::Updated { from } => format!("updated from {from}"),
        Outcome::Unchanged => "already installed (unchanged)".to_string(),
    };
    outln!(
        "{} {} {what} in the {} scope ({}, {})",
        report.id,
        report.version,
        opts.scope,
        report.component,
        report.path.display()
    );
    reaccept_project(home, &opts.root, opts.scope)?;
    Ok(ExitCode::SUCCESS)
}

/// Say which indexes could not be read, and whether a cached copy was used.
fn note_unreachable(fetched: &[index::Fetched]) {
    for f in fetched {
        if let Some(problem) = &f.problem {
            match f.cached_at {
                Some(at) => errln!(
                    "note: index {} could not be read ({problem}); using its copy from {}",
                    f.url,
                    ago(at)
                ),
                None => errln!(
                    "note: index {} could not be read ({problem}) and has no cached copy",
                    f.url
                ),
            }
        }
    }
}

fn ago(at: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(at);
    match now.saturating_sub(at) {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

async fn search_cmd(home: &StudHome, text: &str) -> anyhow::Result<ExitCode> {
    let global = Settings::load(&home.settings_file())?;
    let fetched = index::fetch_all(home.root(), &global.extension_indexes).await?;
    note_unreachable(&fetched);
    let hits = index::search(&fetched, text);
    if hits.is_empty() {
        outln!("no extension matches `{text}`");
        return Ok(ExitCode::from(1));
    }
    for hit in hits {
        let e = hit.entry;
        let version = match hit.latest {
            Some(v) => format!(
                "{}  {}",
                v.version,
                v.publisher.as_deref().unwrap_or("publisher not named")
            ),
            None => "no version fits this stud".into(),
        };
        outln!(
            "{}  {}  {version}\n    {}\n    from {}",
            e.id,
            e.kind.as_deref().unwrap_or("?"),
            e.description.as_deref().or(e.name.as_deref()).unwrap_or(""),
            hit.index
        );
        if let Some(v) = hit.latest
            && !v.capabilities.is_empty()
        {
            outln!("    may: {}", v.capabilities.join("; "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What an index has for one installed extension.
struct Newer {
    id: String,
    installed: semver::Version,
    range: semver::VersionReq,
    /// The newest inside the recorded range that this stud loads.
    update: Option<semver::Version>,
    /// The newest this stud loads, in range or not.
    latest: Option<semver::Version>,
    /// The newest of all, when this stud cannot load it.
    needs_newer_stud: Option<(semver::Version, semver::VersionReq)>,
    index: String,
}

/// For each extension of `root`'s lockfile installed from an index (only
/// `only`, when given), what its index offers now; and the indexes as
/// read, so an update installs from the same copy.
async fn newer(
    home: &StudHome,
    root: &std::path::Path,
    only: Option<&str>,
) -> anyhow::Result<(Vec<Newer>, Vec<index::Fetched>)> {
    let lock = Lockfile::load(root)?;
    if let Some(id) = only {
        match lock.extensions.get(id) {
            None => anyhow::bail!("`{id}` is not installed in this scope; see `stud ext list`"),
            Some(e) if e.index.is_none() => anyhow::bail!(
                "`{id}` was not installed from an index (it came from {}); install the new version the same way",
                e.source
            ),
            Some(_) => {}
        }
    }
    let global = Settings::load(&home.settings_file())?;
    let fetched = index::fetch_all(home.root(), &global.extension_indexes).await?;
    note_unreachable(&fetched);
    let mut out = Vec::new();
    for (id, entry) in &lock.extensions {
        let Some(origin) = &entry.index else { continue };
        if only.is_some_and(|o| o != id) {
            continue;
        }
        let Some(from) = fetched.iter().find(|f| f.url == origin.url) else {
            errln!(
                "note: `{id}` came from {}, which is no longer in extensionIndexes",
                origin.url
            );
            continue;
        };
        let installed: semver::Version = entry
            .version
            .parse()
            .with_context(|| format!("extensions.lock: `{id}` has version `{}`", entry.version))?;
        let range = index::parse_range(Some(&origin.range))?;
        let all = index::versions(std::slice::from_ref(from), id);
        let fits: Vec<_> = all.iter().filter(|c| c.version.fits_host()).collect();
        out.push(Newer {
            id: id.clone(),
            update: fits
                .iter()
                .find(|c| range.matches(&c.version.version))
                .map(|c| c.version.version.clone())
                .filter(|v| *v > installed),
            latest: fits.first().map(|c| c.version.version.clone()),
            needs_newer_stud: all
                .first()
                .filter(|c| !c.version.fits_host() && c.version.version > installed)
                .map(|c| (c.version.version.clone(), c.version.contract.clone())),
            installed,
            range,
            index: origin.url.clone(),
        });
    }
    Ok((out, fetched))
}

async fn outdated_cmd(
    home: &StudHome,
    cwd: &std::path::Path,
    scope: InstallScope,
) -> anyhow::Result<ExitCode> {
    let (_, root) = scope_root(home, cwd, scope)?;
    let (found, _) = newer(home, &root, None).await?;
    let mut any = false;
    for n in &found {
        let mut line = format!("{}  {}", n.id, n.installed);
        match &n.update {
            Some(u) => {
                any = true;
                line.push_str(&format!(
                    " -> {u} (inside {}; `stud ext update {}`)",
                    n.range, n.id
                ));
            }
            None => line.push_str(&format!(" (newest inside {})", n.range)),
        }
        if let Some(l) = n
            .latest
            .as_ref()
            .filter(|l| Some(*l) != n.update.as_ref() && **l > n.installed)
        {
            line.push_str(&format!("; latest {l} (`stud ext install {}@{l}`)", n.id));
        }
        if let Some((v, c)) = &n.needs_newer_stud {
            line.push_str(&format!("; {v} needs a newer stud (contract {c})"));
        }
        outln!("{line}\n    from {}", n.index);
    }
    if found.is_empty() {
        outln!("no extension in this scope was installed from an index");
    } else if !any {
        outln!("everything is up to date");
    }
    Ok(ExitCode::SUCCESS)
}

async fn update_cmd(
    home: StudHome,
    cwd: std::path::PathBuf,
    id: Option<String>,
    scope: InstallScope,
    (yes, allow_signer_change): (bool, bool),
) -> anyhow::Result<ExitCode> {
    let (scope, root) = scope_root(&home, &cwd, scope)?;
    let (found, fetched) = newer(&home, &root, id.as_deref()).await?;
    let global = Settings::load(&home.settings_file())?;
    let mut code = ExitCode::SUCCESS;
    for n in found {
        let Some(to) = n.update else {
            outln!("{} {} is the newest inside {}", n.id, n.installed, n.range);
            continue;
        };
        // The same path as `install ID@=VERSION`, keeping the range the
        // user asked for: its checks, and its question when it asks for
        // more than was granted.
        let from: Vec<index::Fetched> = fetched
            .iter()
            .filter(|f| f.url == n.index)
            .cloned()
            .collect();
        let exact = semver::VersionReq::parse(&format!("={to}"))?;
        let c = index::resolve(&from, &n.id, &exact)?;
        let opts = InstallOptions {
            scope,
            root: root.clone(),
            yes,
            expected_sha256: Some(c.version.sha256.clone()),
            signatures: Signatures {
                publishers: global.trusted_publishers.clone(),
                policy: global.signature_policy,
                file: None,
                inline: c.signature().await?,
            },
            origin: Some(IndexOrigin {
                url: n.index.clone(),
                range: n.range.to_string(),
            }),
            expect: Some((n.id.clone(), to.to_string())),
            allow_signer_change,
        };
        let source = Source::Url(c.archive_url()?);
        if run_install(&home, &source, &opts).await? != ExitCode::SUCCESS {
            code = ExitCode::from(1);
        }
    }
    Ok(code)
}

/// After the user changed a trusted project's extensions themselves
/// (`install`/`remove --scope project`, with its own consent), the
/// project's review now includes that change: record it as accepted, so
/// the next run does not treat the user's own install as a surprise.
fn reaccept_project(home: &StudHome, root: &std::path::Path, scope: Scope) -> anyhow::Result<()> {
    if scope == Scope::Project {
        let review = crate::extensions::trust::review(home.root(), root);
        TrustStore::new(home.root()).record(root, Decision::Trusted, Some(review.digest()))?;
    }
    Ok(())
}

fn remove_cmd(
    home: &StudHome,
    cwd: &std::path::Path,
    id: &str,
    scope: InstallScope,
) -> anyhow::Result<ExitCode> {
    let (scope, root) = scope_root(home, cwd, scope)?;
    if remove(&root, id)? {
        outln!("{id} removed from the {scope} scope");
        reaccept_project(home, &root, scope)?;
        Ok(ExitCode::SUCCESS)
    } else {
        errln!("error: `{id}` is not installed in the {scope} scope (see `stud ext list`)");
        Ok(ExitCode::from(1))
    }
}

/// Re-hash every lockfile entry of the global and (trusted) project scope.
fn verify_cmd(home: &StudHome, cwd: &std::path::Path) -> anyhow::Result<ExitCode> {
    let mut roots = vec![(Scope::Global, home.root().to_path_buf())];
    if let ProjectScope::Trusted(root) = recorded_scope(home.root(), cwd) {
        roots.push((Scope::Project, root));
    }
    let (mut checked, mut bad) = (0, 0);
    for (scope, root) in roots {
        let lock = Lockfile::load(&root)?;
        for (id, entry) in &lock.extensions {
            checked += 1;
            let dir = root.join(&entry.path);
            let manifest_path = dir.join("extension.toml");
            let mut problems = Vec::new();
            match std::fs::read(&manifest_path) {
                Ok(bytes) => {
                    let actual = Sha256Digest::of(&bytes).to_string();
                    if actual != entry.manifest {
                        problems.push(format!(
                            "manifest {}: expected {}, found {actual}",
                            manifest_path.display(),
                            entry.manifest
                        ));
                    }
                    let component = crate::manifest::parse_manifest(
                        &String::from_utf8_lossy(&bytes),
                        &manifest_path,
                        &crate::contract::HOST_CONTRACT,
                    )
                    .map(|m| dir.join(m.component));
                    match component.map(|p| (std::fs::read(&p), p)) {
                        Ok((Ok(c), p)) => {
                            let actual = Sha256Digest::of(&c).to_string();
                            if actual != entry.component {
                                problems.push(format!(
                                    "component {}: expected {}, found {actual}",
                                    p.display(),
                                    entry.component
                                ));
                            }
                        }
                        Ok((Err(e), p)) => problems.push(format!("component {}: {e}", p.display())),
                        Err(e) => {
                            problems.push(format!("manifest {}: {e}", manifest_path.display()))
                        }
                    }
                }
                Err(e) => problems.push(format!("manifest {}: {e}", manifest_path.display())),
            }
            if problems.is_empty() {
                outln!("ok        {id} {} ({scope})", entry.version);
            } else {
                bad += 1;
                for p in problems {
                    outln!("MISMATCH  {id} {} ({scope}): {p}", entry.version);
                }
            }
        }
    }
    outln!("{checked} checked, {bad} with mismatches");
    if bad > 0 {
        errln!(
            "reinstall each mismatch with `stud ext install <source>` or drop it with `stud ext remove <id>`"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn info_cmd(discovery: &Discovery, id: &str) -> anyhow::Result<ExitCode> {
    let Some(d) = discovery
        .found
        .iter()
        .find(|d| d.manifest.id.as_str() == id)
    else {
        errln!("error: no extension `{id}` (see `stud ext list`)");
        return Ok(ExitCode::from(1));
    };
    let m = &d.manifest;
    let bytes = d
        .read_bytes()
        .with_context(|| format!("cannot read {}", d.component_path.display()))?;
    outln!("{} {} ({}) — {}", m.id, m.version, m.kind, m.name);
    if let Some(text) = &m.description {
        outln!("{text}");
    }
    outln!(
        "scope:     {}{}",
        d.scope,
        d.overrides
            .map(|s| format!(" (overrides {s})"))
            .unwrap_or_default()
    );
    outln!("location:  {}", d.location.display());
    outln!(
        "component: {} {}",
        d.component_path.display(),
        Sha256Digest::of(&bytes)
    );
    outln!("contract:  {}", m.contract);
    match &d.lock {
        Some(l) => {
            outln!("installed: from {} (pinned in extensions.lock)", l.source);
            outln!(
                "publisher: {}",
                l.publisher
                    .as_deref()
                    .unwrap_or("none (not signed by a trusted publisher)")
            );
        }
        None if d.scope == Scope::Bundled => outln!("installed: bundled with stud"),
        None if d.dev => outln!(
            "installed: development link (`stud ext dev`; not pinned, reloaded on each build)"
        ),
        None => outln!("installed: by hand (not pinned; `stud ext install` pins it)"),
    }
    outln!("reload:    {}", m.reload);
    if !m.dependencies.is_empty() {
        let deps: Vec<String> = m
            .dependencies
            .iter()
            .map(|d| format!("{} {}", d.id, d.version))
            .collect();
        outln!("needs:     {}", deps.join(", "));
    }
    outln!("it may:");
    for line in describe(&m.capabilities) {
        outln!("  - {line}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(cmd: ExtCommand) -> anyhow::Result<ExitCode> {
    let home = StudHome::resolve()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut discovery = Discovery::scan(&home, &recorded_scope(home.root(), &cwd));
    let rt = || tokio::runtime::Runtime::new().context("cannot start the async runtime");
    match cmd {
        ExtCommand::List { json } => list(&discovery, json),
        ExtCommand::Check {
            ids,
            json,
            no_cache,
        } => {
            only(&mut discovery, &ids)?;
            rt()?.block_on(check(home, project_dir(&cwd), &discovery, json, no_cache))
        }
        ExtCommand::Install {
            source,
            scope,
            yes,
            sha256,
            signature,
            allow_signer_change,
        } => rt()?.block_on(install_cmd(
            home,
            cwd,
            source,
            scope,
            yes,
            (sha256, signature),
            allow_signer_change,
        )),
        ExtCommand::Remove { id, scope } => remove_cmd(&home, &cwd, &id, scope),
        ExtCommand::Verify => verify_cmd(&home, &cwd),
        ExtCommand::Info { id } => info_cmd(&discovery, &id),
        ExtCommand::Pack { dir, output, key } => pack_cmd(&cwd, dir, output, key),
        ExtCommand::Keygen { output } => keygen_cmd(&home, output),
        ExtCommand::Search { text } => rt()?.block_on(search_cmd(&home, &text)),
        ExtCommand::Outdated { scope } => rt()?.block_on(outdated_cmd(&home, &cwd, scope)),
        ExtCommand::Update {
            id,
            scope,
            yes,
            allow_signer_change,
        } => rt()?.block_on(update_cmd(
            home.clone(),
            cwd.clone(),
            id,
            scope,
            (yes, allow_signer_change),
        )),
        ExtCommand::Dev { dir, remove } => dev_cmd(&home, &cwd, dir, remove),
        ExtCommand::New { name, kind } => new_cmd(&home, &cwd, &name, kind),
        ExtCommand::Build { dir } => build_cmd(&home, dir.unwrap_or_else(|| cwd.clone())),
        ExtCommand::Sign { file, key } => {
            let key = key.unwrap_or_else(|| default_key(&home));
            let sig = crate::extensions::signing::sign(&file, &key, signing_password())?;
            outln!("signed {} -> {}", file.display(), sig.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn new_cmd(
    home: &StudHome,
    cwd: &std::path::Path,
    name: &str,
    kind: Kind,
) -> anyhow::Result<ExitCode> {
    let made = crate::extensions::scaffold::new_crate(&home.sdk_kits_dir(), cwd, name, kind)?;
    outln!(
        "created the {kind} extension `{name}` in {}\n  {}\nSDK: {} (contract {})\nNext: cd {name} && stud ext build && stud ext install .",
        made.dir.display(),
        made.files.join("\n  "),
        made.kit.join("sdk").display(),
        stud_protocol::CONTRACT_VERSION,
    );
    Ok(ExitCode::SUCCESS)
}

fn dev_cmd(
    home: &StudHome,
    cwd: &std::path::Path,
    dir: Option<std::path::PathBuf>,
    remove: bool,
) -> anyhow::Result<ExitCode> {
    use crate::extensions::dev::DevLinks;
    let dir = dir.unwrap_or_else(|| cwd.to_path_buf());
    if remove {
        let id_of = |d: &std::path::Path| {
            crate::extensions::pack::read_manifest(d)
                .ok()
                .map(|m| m.id.to_string())
        };
        let gone = DevLinks::unlink(home.root(), &dir.to_string_lossy(), id_of)?;
        outln!("unlinked {} (the folder is left as it is)", gone.display());
        return Ok(ExitCode::SUCCESS);
    }
    if dir.join("Cargo.toml").is_file() {
        build_cmd(home, dir.clone())?;
    }
    // The manifest and component must be usable as they are.
    // A bundled id is refused as it would be at discovery: a link must not
    // replace the code `console` or `protect-paths` means.
    let found = crate::extensions::discovery::from_folder(&dir, Scope::Global)
        .and_then(crate::extensions::discovery::not_reserved)?;
    let linked = DevLinks::link(home.root(), &dir)?;
    outln!(
        "linked `{}` {} ({}) from {} as a development extension: used from that folder (each session pins the bytes it starts with), `stud ext build` there reloads it in running sessions; `stud ext dev --remove {}` unlinks it",
        found.manifest.id,
        found.manifest.version,
        found.manifest.kind,
        linked.display(),
        found.manifest.id
    );
    Ok(ExitCode::SUCCESS)
}

fn build_cmd(home: &StudHome, dir: std::path::PathBuf) -> anyhow::Result<ExitCode> {
    // The crates `ext new` made depend on the kit by path: put it back if
    // it was removed (it is derived from this binary).
    crate::extensions::scaffold::unpack_kit(&home.sdk_kits_dir())?;
    let runtime = Runtime::new(RuntimeOptions {
        cache: Some(home.compile_cache()),
        pooling: false,
    })?;
    let built = crate::extensions::cargo_build::build(&dir, &runtime)?;
    let m = &built.manifest;
    outln!(
        "built `{}` {} ({}): {}, {} bytes\nsha256 {}\nchecks: manifest, contract, imports against its capabilities, exports: ok ({})\nusers will be asked to let it:\n  - {}",
        m.id,
        m.version,
        m.kind,
        built.component.display(),
        built.size,
        built.sha256.hex(),
        built.code_source.as_str(),
        built.asks.join("\n  - ")
    );
    Ok(ExitCode::SUCCESS)
}

fn default_key(home: &StudHome) -> std::path::PathBuf {
    home.root().join("keys").join("stud.key")
}

fn signing_password() -> Option<String> {
    std::env::var(crate::extensions::signing::PASSWORD_VAR).ok()
}

fn keygen_cmd(home: &StudHome, output: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    let dir = output.unwrap_or_else(|| home.root().join("keys"));
    let (key, id) = crate::extensions::signing::keygen(&dir, signing_password())?;
    outln!(
        "wrote {} and {} (key {id})\nTo trust it, add to ~/.stud/settings.json:\n  \"trustedPublishers\": [{{\"name\": \"<your name>\", \"key\": \"{key}\"}}]",
        dir.join("stud.pub").display(),
        dir.join("stud.key").display()
    );
    Ok(ExitCode::SUCCESS)
}

fn pack_cmd(
    cwd: &std::path::Path,
    dir: Option<std::path::PathBuf>,
    output: Option<std::path::PathBuf>,
    key: Option<std::path::PathBuf>,
) -> anyhow::Result<ExitCode> {
    let dir = dir.unwrap_or_else(|| cwd.to_path_buf());
    let packed = crate::extensions::pack::pack(&dir)?;
    let out = output.unwrap_or_else(|| {
        cwd.join(format!(
            "{}-{}.tar.gz",
            packed.manifest.id, packed.manifest.version
        ))
    });
    crate::atomic_write::write_atomic(&out, &packed.bytes)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!(
        "packed `{}` {} into {} ({} bytes)\n  {}\nsha256 {}",
        packed.manifest.id,
        packed.manifest.version,
        out.display(),
        packed.bytes.len(),
        packed.entries.join("\n  "),
        packed.sha256.hex()
    );
    if let Some(key) = key {
        let sig = crate::extensions::signing::sign(&out, &key, signing_password())?;
        println!("signed: {}", sig.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn list(discovery: &Discovery, as_json: bool) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    for d in &discovery.found {
        let bytes = d
            .read_bytes()
            .with_context(|| format!("cannot read {}", d.component_path.display()))?;
        let digest = Sha256Digest::of(&bytes);
        let contract = ComponentInfo::inspect(&bytes)
            .ok()
            .and_then(|i| i.contract_version())
            .unwrap_or_else(|| "?".into());
        rows.push((d, digest, contract));
    }
    if as_json {
        let items: Vec<Value> = rows
            .iter()
            .map(|(d, digest, contract)| entry_json(d, digest, contract))
            .collect();
        let problems: Vec<String> = discovery.problems.iter().map(|p| p.to_string()).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"extensions": items, "problems": problems}))?
        );
    } else {
        outln!(
            "{:<18} {:<17} {:<8} {:<9} {:<8} {:<13} CAPABILITIES",
            "ID",
            "KIND",
            "VERSION",
            "CONTRACT",
            "SCOPE",
            "SHA256"
        );
        for (d, digest, contract) in &rows {
            let m = &d.manifest;
            outln!(
                "{:<18} {:<17} {:<8} {:<9} {:<8} {:<13} {}",
                m.id.as_str(),
                m.kind.as_str(),
                m.version.to_string(),
                contract,
                if d.dev { "dev" } else { d.scope.as_str() },
                digest.short(),
                capabilities_text(&m.capabilities)
            );
        }
        for p in &discovery.problems {
            errln!("warning: {p}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn entry_json(d: &Discovered, digest: &Sha256Digest, contract: &str) -> Value {
    let m = &d.manifest;
    let caps = &m.capabilities;
    json!({
        "id": m.id.as_str(),
        "name": m.name,
        "kind": m.kind.as_str(),
        "version": m.version.to_string(),
        "contract": contract,
        "contract_range": m.contract.to_string(),
        "scope": d.scope.as_str(),
        "overrides": d.overrides.map(|s| s.as_str()),
        "location": d.location.display().to_string(),
        "pinned": d.lock.is_some() || d.scope == Scope::Bundled,
        "dev": d.dev,
        "sha256": digest.hex(),
        "capabilities": {
            "filesystem": caps.filesystem.iter().map(|f| json!({"dir": fs_dir(f.dir), "access": fs_access(f.access)})).collect::<Vec<_>>(),
            "network": caps.network.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            "exec": caps.exec,
            "secrets": caps.secrets,
        },
    })
}

fn fs_dir(d: FsDir) -> &'static str {
    match d {
        FsDir::Project => "project",
        FsDir::Data => "data",
    }
}

fn fs_access(a: FsAccess) -> &'static str {
    match a {
        FsAccess::Read => "read",
        FsAccess::ReadWrite => "read-write",
    }
}

/// `fs:project(read) net:api.example.com exec secret:KEY`, or `-`.
fn capabilities_text(caps: &Capabilities) -> String {
    let mut parts: Vec<String> = Vec::new();
    for f in &caps.filesystem {
        parts.push(format!("fs:{}({})", fs_dir(f.dir), fs_access(f.access)));
    }
    for h in &caps.network {
        parts.push(format!("net:{h}"));
    }
    if caps.exec {
        parts.push("exec".into());
    }
    for s in &caps.secrets {
        parts.push(format!("secret:{s}"));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

/// Keep only the named extensions; a name that is not found is an error
/// (a typo must not pass as "0 failed").
fn only(discovery: &mut Discovery, ids: &[String]) -> anyhow::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    if let Some(missing) = ids.iter().find(|id| {
        !discovery
            .found
            .iter()
            .any(|d| d.manifest.id.as_str() == id.as_str())
    }) {
        anyhow::bail!(
            "no extension `{missing}` is installed here; `stud ext list` shows the ones that are"
        );
    }
    discovery
        .found
        .retain(|d| ids.iter().any(|id| id == d.manifest.id.as_str()));
    Ok(())
}

async fn check(
    home: StudHome,
    project: std::path::PathBuf,
    discovery: &Discovery,
    as_json: bool,
    no_cache: bool,
) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&home.settings_file())?;
    let configs = settings.extension_configs();
    let (grants, _) = UserGrants::from_settings(&settings);
    let runtime = Runtime::new(RuntimeOptions {
        cache: (!no_cache).then(|| home.compile_cache()),
        pooling: true,
    })?;
    let registry = Arc::new(Registry {
        runtime: runtime.clone(),
        home,
        project_dir: project,
        services: Arc::new(StderrServices),
        configs,
        fallback_configs: Default::default(),
        grants,
    });
    let report = registry.load_all(discovery.found.clone()).await;
    let mut results = Vec::new();
    let mut failed = report.failed.len();
    for ext in &report.loaded {
        match smoke(ext).await {
            Ok(summary) => results.push(json!({"id": ext.id().as_str(), "kind": ext.kind().as_str(), "status": "ok", "code": ext.code_source().map(|c| c.as_str()), "summary": summary})),
            Err(e) => {
                failed += 1;
                results.push(json!({"id": ext.id().as_str(), "kind": ext.kind().as_str(), "status": "failed", "code": ext.code_source().map(|c| c.as_str()), "error": e.to_string()}));
            }
        }
    }
    for (id, e) in &report.failed {
        results.push(json!({"id": id.as_str(), "status": "failed", "error": e.to_string()}));
    }
    let stats = runtime.cache_stats();
    let load = std::sync::atomic::Ordering::Relaxed;
    if as_json {
        let out = json!({
            "allocator": runtime.allocator().as_str(),
            "compiled": stats.compiled.load(load),
            "cache_hits": stats.cache_hits.load(load),
            "cache_discarded": stats.discarded.load(load),
            "native": stats.native.load(load),
            "native_refused": stats.native_refused.load(load),
            "extensions": results,
            "problems": discovery.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &results {
            let id = r["id"].as_str().unwrap_or("?");
            match r["status"].as_str() {
                Some("ok") => outln!(
                    "ok      {id:<18} ({}) {}",
                    r["code"].as_str().unwrap_or("?"),
                    r["summary"].as_str().unwrap_or("")
                ),
                _ => outln!("FAILED  {id:<18} {}", r["error"].as_str().unwrap_or("")),
            }
        }
        outln!(
            "{} extensions, {} failed; allocator {}; {} compiled, {} from cache, {} built in",
            results.len(),
            failed,
            runtime.allocator().as_str(),
            stats.compiled.load(load),
            stats.cache_hits.load(load),
            stats.native.load(load)
        );
        for p in &discovery.problems {
            errln!("warning: {p}");
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Start the extension and make one harmless typed call of its kind.
async fn smoke(ext: &Extension) -> Result<String, crate::runtime::CallError> {
    ext.start().await?;
    Ok(match ext.kind() {
        Kind::Tool => {
            let spec = ext.tool_describe().await?;
            format!("tool `{}`", spec.name)
        }
        Kind::Provider => {
            let models = ext.provider_models().await?;
            format!(
                "models: {}",
                models
                    .iter()
                    .map(|m| m.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        Kind::Command => format!("command `{}`", ext.command_describe().await?.name),
        Kind::StateMachine => format!("entry stage `{}`", ext.sm_entry_stage().await?),
        Kind::Hook => format!("{} hook registration(s)", ext.manifest.hooks.len()),
        other => format!("{other} started"),
    })
}
