//! Protected paths: project files no extension may open (`.env`, keys),
//! a host policy enforced where files are opened (WASI `open-at` and the
//! path calls that could move or alias a file, the `files` walk), on the
//! path the file system resolved, never on what a tool's arguments say.
//!
//! A project path is protected when it, or one of the folders it lies in,
//! matches a pattern: the pattern is tried against the project-relative
//! path and against its last component, so `.env` protects every `.env`
//! and `secrets` protects everything under a folder called `secrets`. The
//! user lifts protection from single files by naming their exact
//! project-relative paths in `protectedPaths.allow` (global settings only).
//! Files outside the project (an extension's own data folder) are not
//! covered: the policy is about the user's project.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use std::borrow::Cow;

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Protected unless the settings add more (they cannot take these away:
/// `protectedPaths.allow` lifts single files).
pub const DEFAULT_PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".npmrc",
    ".pypirc",
];

/// A pattern that is not a glob.
#[derive(Debug, thiserror::Error)]
#[error("protectedPaths.patterns: `{pattern}` is not a glob ({reason}); fix or remove it")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

/// The policy; cheap to share (`Arc`) between every extension of a
/// session.
#[derive(Debug, Clone)]
pub struct ProtectedPaths {
    patterns: Vec<String>,
    /// The globs compiled, at the first path checked: most starts open no
    /// project file before their first request, and building the sets
    /// (literal automata, regexes, the CPU's features probed) cost about
    /// 0.15 ms of every start (issue 42, docs/benchmarks.md). Each
    /// pattern is parsed when the policy is made, so a bad one is still
    /// named there.
    compiled: OnceLock<Compiled>,
    /// Exact project-relative paths the user granted (`/`-separated).
    allow: Vec<String>,
}

/// The patterns as matchers, or why they could not be built together.
#[derive(Debug, Clone)]
enum Compiled {
    Sets {
        /// Patterns without `/`, matched against one path component.
        names: Matcher,
        /// Patterns with `/`, matched against the project-relative path.
        paths: Matcher,
    },
    /// Closed world: every parsed pattern stands, so a set that does not
    /// build (a size limit) protects every project path rather than none
    /// of the user's.
    Failed(String),
}

/// Some of the patterns, compiled in lower case (candidates are folded to
/// it too: `.ENV` and `Server.KEY` are the same secrets, and the same files
/// on a case-insensitive file system), with each one's place in `patterns`.
/// Folding the text rather than asking for case-insensitive globs keeps
/// globset's fast literal and extension strategies: a walk checks every
/// file it meets.
#[derive(Debug, Clone)]
struct Matcher {
    set: GlobSet,
    index: Vec<usize>,
}

impl Matcher {
    fn build<'p>(
        patterns: impl Iterator<Item = (usize, &'p String)>,
    ) -> Result<Self, PatternError> {
        let mut builder = GlobSetBuilder::new();
        let mut index = Vec::new();
        for (i, p) in patterns {
            let glob = Glob::new(&p.to_lowercase()).map_err(|e| PatternError {
                pattern: p.clone(),
                reason: e.kind().to_string(),
            })?;
            builder.add(glob);
            index.push(i);
        }
        let set = builder.build().map_err(|e| PatternError {
            pattern: String::new(),
            reason: e.to_string(),
        })?;
        Ok(Matcher { set, index })
    }

    /// The place of the first pattern matching `text`.
    fn first(&self, text: &str) -> Option<usize> {
        if self.index.is_empty() {
            return None;
        }
        let folded = fold(text);
        // Almost every path a walk meets matches nothing: ask without
        // collecting first.
        if !self.set.is_match(folded.as_ref()) {
            return None;
        }
        self.set
            .matches(folded.as_ref())
            .first()
            .map(|i| self.index[*i])
    }
}

/// `text` in lower case, borrowed when it is already.
fn fold(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_uppercase) {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

impl Default for ProtectedPaths {
    fn default() -> Self {
        ProtectedPaths::new(DEFAULT_PATTERNS.iter().copied(), std::iter::empty::<&str>())
            .unwrap_or_else(|_| ProtectedPaths::nothing())
    }
}

impl ProtectedPaths {
    /// The defaults plus `extra`; `allow` lists exact project paths.
    pub fn new<'a>(
        extra: impl IntoIterator<Item = &'a str>,
        allow: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, PatternError> {
        let mut patterns: Vec<String> = DEFAULT_PATTERNS.iter().map(|p| p.to_string()).collect();
        for p in extra {
            if !patterns.iter().any(|q| q == p) {
                Self::check_pattern(p)?;
                patterns.push(p.to_string());
            }
        }
        Ok(ProtectedPaths {
            patterns,
            compiled: OnceLock::new(),
            allow: allow
                .into_iter()
                .map(|a| normalize_rel(a.trim_start_matches("./")))
                .collect(),
        })
    }

    /// Whether `pattern` is a glob the policy can use.
    pub fn check_pattern(pattern: &str) -> Result<(), PatternError> {
        Glob::new(&pattern.to_lowercase())
            .map(|_| ())
            .map_err(|e| PatternError {
                pattern: pattern.to_string(),
                reason: e.kind().to_string(),
            })
    }

    /// Protects nothing (only when the defaults themselves fail to parse,
    /// which a unit test rules out).
    fn nothing() -> Self {
        ProtectedPaths {
            patterns: Vec::new(),
            compiled: OnceLock::new(),
            allow: Vec::new(),
        }
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| {
            let with_slash = |want: bool| {
                Matcher::build(
                    self.patterns
                        .iter()
                        .enumerate()
                        .filter(move |(_, p)| p.contains('/') == want),
                )
            };
            match (with_slash(false), with_slash(true)) {
                (Ok(names), Ok(paths)) => Compiled::Sets { names, paths },
                (Err(e), _) | (_, Err(e)) => Compiled::Failed(format!(
                    "protectedPaths.patterns, which could not be compiled together ({}): every project file is protected until they are fixed",
                    e.reason
                )),
            }
        })
    }

    /// The pattern matching one step of a path: its last component `name`
    /// or the whole `prefix`.
    fn step(&self, prefix: &str, name: &str) -> Option<&str> {
        match self.compiled() {
            Compiled::Sets { names, paths } => names
                .first(name)
                .or_else(|| paths.first(prefix))
                .map(|i| self.patterns[i].as_str()),
            Compiled::Failed(why) => Some(why),
        }
    }

    /// `hit`, unless the user allowed exactly `rel`.
    fn unless_allowed<'s>(&self, hit: Option<&'s str>, rel: &str) -> Option<&'s str> {
        hit.filter(|_| !self.allow.iter().any(|a| a == rel))
    }

    /// The pattern that protects `rel` (a project-relative path, `/`
    /// separated, already resolved), unless the user allowed that exact
    /// path.
    pub fn protecting(&self, rel: &str) -> Option<&str> {
        let rel = rel.trim_start_matches("./").trim_matches('/');
        if rel.is_empty() || rel == "." {
            return None;
        }
        let mut end = 0;
        let mut hit = None;
        for part in rel.split('/') {
            end += part.len();
            hit = self.step(&rel[..end], part);
            if hit.is_some() {
                break;
            }
            end += 1;
        }
        self.unless_allowed(hit, rel)
    }

    /// Like [`Self::protecting_in`] for an entry of a walk that already
    /// checked (and did not prune) the folders above it: only the entry
    /// itself is matched.
    pub fn protecting_entry(&self, project: &Path, path: &Path) -> Option<&str> {
        self.protecting_rel_entry(path.strip_prefix(project).ok()?)
    }

    /// [`Self::protecting_entry`] for a project-relative path.
    pub fn protecting_rel_entry(&self, rel: &Path) -> Option<&str> {
        let name = rel.file_name()?.to_string_lossy();
        let (names, paths) = match self.compiled() {
            Compiled::Sets { names, paths } => (names, paths),
            Compiled::Failed(why) => {
                return self.unless_allowed(Some(why), &rel.to_string_lossy());
            }
        };
        let hit = match names.first(&name) {
            Some(i) => Some(self.patterns[i].as_str()),
            None if paths.index.is_empty() => return None,
            None => paths
                .first(&rel.to_string_lossy())
                .map(|i| self.patterns[i].as_str()),
        };
        hit?;
        self.unless_allowed(hit, &rel.to_string_lossy())
    }

    /// The pattern protecting `real` (an absolute, resolved path) when it
    /// lies inside `project` (also resolved).
    pub fn protecting_in(&self, project: &Path, real: &Path) -> Option<&str> {
        let rel = real.strip_prefix(project).ok()?;
        self.protecting(&rel.to_string_lossy())
    }
}

/// What the policy needs for one extension: the rules and the project
/// folder it was granted, resolved (`None`: no project grant, nothing to
/// check).
#[derive(Debug, Clone, Default)]
pub struct FileGuard {
    pub protected: Arc<ProtectedPaths>,
    pub project: Option<PathBuf>,
}

/// `a/./b//c` as `a/b/c` (no `..` handling: callers resolve first).
fn normalize_rel(rel: &str) -> String {
    Path::new(rel)
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether a relative path climbs with `..` anywhere. The calls that move,
/// link or remove an entry refuse such paths: a `..` after a symlinked
/// folder leads where the text does not say (`s/../x` with `s -> secrets/d`
/// is `secrets/x`), and no tool needs one.
pub fn climbs(path: &str) -> bool {
    Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
}

/// `path` (relative, from a directory at `dir`) resolved lexically: `.`
/// dropped, `..` taken back. `None` when it climbs above `dir` or is
/// absolute (WASI refuses both; this is only for the checks).
pub fn join_lexical(dir: &Path, path: &str) -> Option<PathBuf> {
    let mut out = dir.to_path_buf();
    let mut depth = 0usize;
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => {
                out.push(p);
                depth += 1;
            }
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => {
                out.pop();
                depth -= 1;
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_build_and_protect_secrets_anywhere() {
        let p = ProtectedPaths::default();
        assert_eq!(p.patterns().len(), DEFAULT_PATTERNS.len());
        for hit in [
            ".env",
            "config/.env",
            ".env.local",
            "a/b/server.key",
            "id_rsa",
        ] {
            assert!(p.protecting(hit).is_some(), "{hit}");
        }
        for hit in [".ENV", "deploy/Server.KEY", "home/.netrc"] {
            assert!(p.protecting(hit).is_some(), "{hit}");
        }
        for miss in ["src/main.rs", "env", ".envrc", "keys.md", "", "."] {
            assert!(p.protecting(miss).is_none(), "{miss}");
        }
    }

    #[test]
    fn a_protected_folder_protects_what_is_inside() {
        let p = ProtectedPaths::new(["secrets", "deploy/creds/*"], []).unwrap();
        assert_eq!(p.protecting("secrets/a.txt"), Some("secrets"));
        assert_eq!(p.protecting("x/secrets/deep/a.txt"), Some("secrets"));
        assert_eq!(p.protecting("deploy/creds/db"), Some("deploy/creds/*"));
        assert!(p.protecting("deploy/readme").is_none());
    }

    #[test]
    fn only_the_exact_allowed_path_is_lifted() {
        let p = ProtectedPaths::new([], ["config/dev.key", "./.env.example"]).unwrap();
        assert!(p.protecting("config/dev.key").is_none());
        assert!(p.protecting(".env.example").is_none());
        assert!(p.protecting("config/prod.key").is_some());
        assert!(p.protecting("other/config/dev.key").is_some());
    }

    #[test]
    fn bad_patterns_name_themselves() {
        let e = ProtectedPaths::new(["a[b"], []).unwrap_err();
        assert_eq!(e.pattern, "a[b");
        assert!(e.to_string().contains("protectedPaths.patterns"));
    }

    #[test]
    fn a_walk_entry_is_matched_by_its_name_or_its_path() {
        let p = ProtectedPaths::new(["deploy/creds/*"], ["keys/dev.key"]).unwrap();
        let project = Path::new("/p");
        let entry = |rel: &str| p.protecting_entry(project, &project.join(rel));
        assert_eq!(entry("a/Server.KEY"), Some("*.key"));
        assert_eq!(entry("deploy/creds/db"), Some("deploy/creds/*"));
        assert_eq!(entry("keys/dev.key"), None);
        assert_eq!(entry("src/main.rs"), None);
    }

    #[test]
    fn paths_outside_the_project_are_not_covered() {
        let p = ProtectedPaths::default();
        let project = Path::new("/work/p");
        assert_eq!(
            p.protecting_in(project, Path::new("/work/p/.env")),
            Some(".env")
        );
        assert!(
            p.protecting_in(project, Path::new("/home/u/.stud/data/x/.env"))
                .is_none()
        );
    }

    #[test]
    fn the_globs_are_compiled_at_the_first_check_only() {
        let p = ProtectedPaths::new(["secrets"], []).unwrap();
        assert!(p.compiled.get().is_none(), "made without compiling");
        assert_eq!(p.protecting("a/secrets/x"), Some("secrets"));
        assert!(matches!(p.compiled.get(), Some(Compiled::Sets { .. })));
        let shared = p.clone();
        assert_eq!(shared.protecting("x/.env"), Some(".env"));
    }

    #[test]
    fn sets_that_do_not_build_protect_every_project_path() {
        let p = ProtectedPaths {
            compiled: OnceLock::from(Compiled::Failed("why".into())),
            ..ProtectedPaths::new([], ["docs/allowed.md"]).unwrap()
        };
        assert_eq!(p.protecting("src/main.rs"), Some("why"));
        let project = Path::new("/p");
        assert_eq!(
            p.protecting_entry(project, &project.join("README.md")),
            Some("why")
        );
        assert_eq!(
            p.protecting("docs/allowed.md"),
            None,
            "an exact grant stands"
        );
        assert!(
            p.protecting_in(project, Path::new("/elsewhere/x"))
                .is_none(),
            "outside the project nothing changes"
        );
    }

    #[test]
    fn lexical_joins_stay_below_their_folder() {
        let d = Path::new("/p");
        assert_eq!(join_lexical(d, "a/./b/../c"), Some(PathBuf::from("/p/a/c")));
        assert_eq!(join_lexical(d, ".."), None);
        assert_eq!(join_lexical(d, "/etc"), None);
    }
}
