//! MCP server entries in the shape users already have: `mcpServers` in
//! `settings.json` and a project's `.mcp.json`, each server
//! `{command, args, env}` (stdio) or `{type: "http", url, headers}`
//! (streamable HTTP). Values in `env` and `headers` may reference the
//! environment, as `{"env": "NAME"}` or `${NAME}` inside a string; a
//! project file may not hold a secret itself (see [`check_project_values`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use stud_protocol::terminal::{push_escaped, steers};

use super::env_power::power;

/// Where a server entry was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpScope {
    /// The user's `settings.json`.
    Global,
    /// A trusted project's settings or `.mcp.json`, for that project root.
    Project(PathBuf),
    /// Passed by an editor (ACP `session/new`) for a session in that
    /// project root; trusted apart from any configured server.
    Editor(PathBuf),
}

impl McpScope {
    pub fn as_str(&self) -> &'static str {
        match self {
            McpScope::Global => "global",
            McpScope::Project(_) => "project",
            McpScope::Editor(_) => "editor",
        }
    }
}

/// A value from a config file: literal text with `${NAME}` references to
/// environment variables, resolved when the server is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Env(String),
}

impl Template {
    /// `{"env": "NAME"}`, or a string with `${NAME}` references.
    fn parse(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(s) => Self::parse_text(s),
            Value::Object(o) => match (o.get("env").and_then(Value::as_str), o.len()) {
                (Some(name), 1) if valid_env_name(name) => Ok(Template {
                    parts: vec![Part::Env(name.to_string())],
                }),
                _ => Err("an object value must be {\"env\": \"NAME\"} with a variable name".into()),
            },
            _ => Err("must be a string or {\"env\": \"NAME\"}".into()),
        }
    }

    fn parse_text(s: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = s;
        while let Some(at) = rest.find("${") {
            if at > 0 {
                parts.push(Part::Text(rest[..at].to_string()));
            }
            let after = &rest[at + 2..];
            let Some(end) = after.find('}') else {
                return Err(format!("`${{` without a closing `}}` in {s:?}"));
            };
            let name = &after[..end];
            if !valid_env_name(name) {
                return Err(format!("`${{{name}}}` is not a variable name"));
            }
            parts.push(Part::Env(name.to_string()));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() || parts.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Whether any of it comes from the environment.
    pub fn references(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Env(_)))
    }

    /// The text, with each reference read through `lookup`; `Err` names
    /// the first variable that is not set.
    pub fn resolve(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Env(name) => match lookup(name) {
                    Some(v) => out.push_str(&v),
                    None => return Err(name.clone()),
                },
            }
        }
        Ok(out)
    }

    /// How the value is shown (references as written, never their values).
    pub fn shown(&self) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Env(n) => format!("${{{n}}}"),
            })
            .collect()
    }
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, Template>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, Template>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub id: String,
    pub scope: McpScope,
    /// The file it was read from, for messages.
    pub file: PathBuf,
    pub transport: Transport,
    /// The entry says `"trustReadOnlyHints": true`. It counts only in the
    /// user's global settings ([`Self::hints_trusted`]).
    pub trust_read_only_hints: bool,
    /// How long it may take to start (`"startTimeoutMs"`); not part of the
    /// trust digest (it changes nothing the server may do).
    pub start_timeout: Option<std::time::Duration>,
}

impl McpServer {
    /// The digest MCP trust is keyed on: scope (with the project root),
    /// transport, command, arguments, URL and the environment and header
    /// entries as written. An edited command or URL asks again.
    pub fn digest(&self) -> String {
        let (kind, target, args, values) = match &self.transport {
            Transport::Stdio { command, args, env } => {
                ("stdio", command.clone(), args.clone(), env)
            }
            Transport::Http { url, headers } => ("http", url.clone(), Vec::new(), headers),
        };
        let values: BTreeMap<&String, String> =
            values.iter().map(|(k, v)| (k, v.shown())).collect();
        let scope = match &self.scope {
            McpScope::Global => "global".to_string(),
            McpScope::Project(root) => format!("project:{}", root.display()),
            McpScope::Editor(root) => format!("editor:{}", root.display()),
        };
        let canonical = serde_json::json!({
            "id": self.id,
            "scope": scope,
            "transport": kind,
            "target": target,
            "args": args,
            "values": values,
            "trustReadOnlyHints": self.trust_read_only_hints,
        });
        format!(
            "sha256:{}",
            hex::encode(Sha256::digest(canonical.to_string()))
        )
    }

    /// One line for lists and prompts: what would run or be contacted,
    /// each word quoted where it has spaces or quotes (so one argument
    /// cannot pass for two) and with every invisible or steering
    /// character shown as an escape, and the `env` or `headers` entries:
    /// references as written (`NAME=${VAR}`: which of the user's variables
    /// flow to it). Literal values are shown in full for a project's
    /// server (they are what a repository asks to run, and a project file
    /// cannot hold a secret: [`check_project_values`]); for the user's own
    /// (global) and an editor's servers they stay `<literal>`, since they
    /// may be secrets. [`Self::warnings`] says which variables change what
    /// runs.
    pub fn describe(&self) -> String {
        let full = matches!(self.scope, McpScope::Project(_));
        let values = |label: &str, m: &BTreeMap<String, Template>| {
            if m.is_empty() {
                return String::new();
            }
            let shown: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    if v.references() || full {
                        format!("{}={}", word(k), word(&v.shown()))
                    } else {
                        format!("{}=<literal>", word(k))
                    }
                })
                .collect();
            format!(" ({label}: {})", shown.join(", "))
        };
        match &self.transport {
            Transport::Stdio { command, args, env } => {
                let mut s = word(command);
                for a in args {
                    s.push(' ');
                    s.push_str(&word(a));
                }
                s + &values("env", env)
            }
            Transport::Http { url, headers } => {
                format!("{}{}", word(url), values("headers", headers))
            }
        }
    }

    /// Whether the server's `readOnlyHint`s skip approvals (a tool it
    /// calls read-only runs unasked in ask mode): only when the user's own
    /// global settings say so. A repository's `.mcp.json` (or an editor)
    /// setting the flag would let the server decide which of its calls
    /// nobody is asked about.
    pub fn hints_trusted(&self) -> bool {
        self.trust_read_only_hints && self.scope == McpScope::Global
    }

    /// One line per `env` entry with power over what the server runs
    /// (`LD_PRELOAD`, `NODE_OPTIONS`, `PATH`, `PYTHON*`, `GIT_*`, ...):
    /// "`LD_PRELOAD` changes which code the server runs", and one for
    /// `trustReadOnlyHints` (what it does, or that it is ignored). Shown
    /// with every trust question and listing, whatever the scope.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines: Vec<String> = match &self.transport {
            Transport::Stdio { env, .. } => env
                .keys()
                .filter_map(|name| power(name).map(|p| format!("`{}` {}", word(name), p.says())))
                .collect(),
            Transport::Http { .. } => Vec::new(),
        };
        if self.hints_trusted() {
            lines.push(
                "`trustReadOnlyHints`: tools this server calls read-only run without asking in ask mode"
                    .into(),
            );
        } else if self.trust_read_only_hints {
            lines.push(format!(
                "`trustReadOnlyHints` is ignored: it is set in {} ({} scope), and only your global settings may let a server's read-only hints skip approvals",
                self.file.display(),
                self.scope.as_str()
            ));
        }
        lines
    }
}

/// A word of a command line or a value as a person must see it: every
/// character that steers a terminal or hides itself (`\r`, escapes,
/// bidirectional overrides) and every line break or tab as a visible
/// escape, and the whole in single quotes when it is empty or has spaces,
/// quotes or escapes (a `'` inside as `'\''`, as a shell writes it).
fn word(text: &str) -> String {
    let mut visible = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => visible.push_str("\\n"),
            '\t' => visible.push_str("\\t"),
            c if steers(c) || (c.is_whitespace() && c != ' ') => push_escaped(&mut visible, c),
            c => visible.push(c),
        }
    }
    let plain = !visible.is_empty()
        && !visible
            .chars()
            .any(|c| c == ' ' || c == '\'' || c == '"' || c == '\\');
    if plain {
        visible
    } else {
        format!("'{}'", visible.replace('\'', "'\\''"))
    }
}

/// A server entry that cannot be used, named by server and field (or a
/// file whose `mcpServers` cannot be read at all: `server` is empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe_error(self))]
pub struct ConfigError {
    pub server: String,
    pub file: PathBuf,
    pub field: String,
    pub reason: String,
}

fn describe_error(e: &ConfigError) -> String {
    if e.server.is_empty() {
        format!("{}: `{}` {}", e.file.display(), e.field, e.reason)
    } else {
        format!(
            "MCP server `{}` in {}: `{}` {}",
            e.server,
            e.file.display(),
            e.field,
            e.reason
        )
    }
}

/// Server ids become part of tool names (`mcp__<server>__<tool>`), which
/// providers limit to letters, digits, `_` and `-`; and `__` separates the
/// server from the tool, so an id must not hold it: `github__x`'s tool
/// `pwn` would be `mcp__github__x__pwn`, which reads as server `github`'s
/// tool `x__pwn` (and an allowlist entry for `github` would have covered
/// it).
pub fn valid_server_id(id: &str) -> bool {
    server_id_problem(id).is_none()
}

/// Why `id` cannot be a server id, if it cannot.
fn server_id_problem(id: &str) -> Option<&'static str> {
    let chars_ok = id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if id.is_empty() || id.len() > 48 || !chars_ok {
        Some("must be 1 to 48 letters, digits, `_` or `-` (it becomes part of tool names)")
    } else if id.contains("__") {
        Some(
            "has `__`, which separates the server from the tool in `mcp__<server>__<tool>` (its tools would read as another server's, and an allowlist entry for that server would cover them); rename the server without `__` (one `_` or a `-`)",
        )
    } else {
        None
    }
}

/// Parse the `mcpServers` object of one file. Each bad entry is an error
/// of its own; the good ones are kept.
pub fn parse_servers(
    servers: &Map<String, Value>,
    scope: &McpScope,
    file: &Path,
) -> (Vec<McpServer>, Vec<ConfigError>) {
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for (id, entry) in servers {
        match parse_one(id, entry, scope, file) {
            Ok(Some(s)) => ok.push(s),
            Ok(None) => {}
            Err((field, reason)) => errors.push(ConfigError {
                server: id.clone(),
                file: file.to_path_buf(),
                field,
                reason,
            }),
        }
    }
    (ok, errors)
}

type FieldError = (String, String);

fn parse_one(
    id: &str,
    entry: &Value,
    scope: &McpScope,
    file: &Path,
) -> Result<Option<McpServer>, FieldError> {
    let err = |field: &str, reason: &str| (field.to_string(), reason.to_string());
    if let Some(problem) = server_id_problem(id) {
        return Err(err("id", problem));
    }
    let Some(obj) = entry.as_object() else {
        return Err(err("(entry)", "must be an object"));
    };
    if obj.get("disable").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let known = [
        "type",
        "command",
        "args",
        "env",
        "url",
        "headers",
        "trustReadOnlyHints",
        "startTimeoutMs",
        "disable",
    ];
    if let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err((
            k.clone(),
            format!("is not a known key (known: {})", known.join(", ")),
        ));
    }
    let kind = match obj.get("type") {
        None => {
            if obj.contains_key("url") {
                "http"
            } else {
                "stdio"
            }
        }
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err(err("type", "must be \"stdio\" or \"http\"")),
    };
    let transport = match kind {
        "stdio" => {
            let command = match obj.get("command") {
                Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
                Some(_) => return Err(err("command", "must be a non-empty string")),
                None => return Err(err("command", "is missing (a stdio server runs a command)")),
            };
            for k in ["url", "headers"] {
                if obj.contains_key(k) {
                    return Err((k.to_string(), "belongs to an http server, not stdio".into()));
                }
            }
            let args = match obj.get("args") {
                None => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| err("args", "must be a list of strings"))?,
                Some(_) => return Err(err("args", "must be a list of strings")),
            };
            let env = values(obj.get("env"), "env")?;
            Transport::Stdio { command, args, env }
        }
        "http" | "streamable-http" => {
            let url = match obj.get("url") {
                Some(Value::String(u)) => u.clone(),
                Some(_) => return Err(err("url", "must be a string")),
                None => return Err(err("url", "is missing (an http server has a URL)")),
            };
            check_url(&url).map_err(|r| err("url", &r))?;
            for k in ["command", "args", "env"] {
                if obj.contains_key(k) {
                    return Err((k.to_string(), "belongs to a stdio server, not http".into()));
                }
            }
            let headers = values(obj.get("headers"), "headers")?;
            Transport::Http { url, headers }
        }
        "sse" => {
            return Err(err(
                "type",
                "\"sse\" (the old HTTP+SSE transport) is not supported; use \"http\" (streamable HTTP)",
            ));
        }
        _ => return Err(err("type", "must be \"stdio\" or \"http\"")),
    };
    let trust_read_only_hints = match obj.get("trustReadOnlyHints") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err("trustReadOnlyHints", "must be true or false")),
    };
    let start_timeout = match obj.get("startTimeoutMs") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(ms @ 100..=600_000) => Some(std::time::Duration::from_millis(ms)),
            _ => {
                return Err(err(
                    "startTimeoutMs",
                    "must be a whole number of milliseconds from 100 to 600000",
                ));
            }
        },
    };
    let server = McpServer {
        id: id.to_string(),
        scope: scope.clone(),
        file: file.to_path_buf(),
        transport,
        trust_read_only_hints,
        start_timeout,
    };
    if let McpScope::Project(_) = scope {
        check_project_values(&server)?;
    }
    Ok(Some(server))
}

fn values(v: Option<&Value>, field: &str) -> Result<BTreeMap<String, Template>, FieldError> {
    let Some(v) = v else {
        return Ok(BTreeMap::new());
    };
    let Some(obj) = v.as_object() else {
        return Err((
            field.to_string(),
            "must be an object of names to values".into(),
        ));
    };
    let mut out = BTreeMap::new();
    for (k, v) in obj {
        let t = Template::parse(v).map_err(|r| (format!("{field}.{k}"), r))?;
        out.insert(k.clone(), t);
    }
    Ok(out)
}

fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not a URL ({e})"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            let local = matches!(
                parsed.host_str(),
                Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
            );
            if local {
                Ok(())
            } else {
                Err("must be https:// (plain http:// only to 127.0.0.1 or localhost)".into())
            }
        }
        other => Err(format!("has the scheme `{other}`; use https://")),
    }
}

/// Names that usually hold a credential.
fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|s| n.contains(s))
}

/// A project file (shared in a repository) may not hold a secret: every
/// header value, and every env value whose name looks like a credential,
/// must reference the environment instead.
fn check_project_values(server: &McpServer) -> Result<(), FieldError> {
    let (field, values, all) = match &server.transport {
        Transport::Stdio { env, .. } => ("env", env, false),
        Transport::Http { headers, .. } => ("headers", headers, true),
    };
    for (name, v) in values {
        if (all || looks_secret(name)) && !v.references() {
            return Err((
                format!("{field}.{name}"),
                "holds a literal value in a project file; a secret does not belong in a repository: write {\"env\": \"NAME\"} (or ${NAME}) and set the variable".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value, scope: McpScope) -> (Vec<McpServer>, Vec<ConfigError>) {
        parse_servers(
            v.as_object().unwrap(),
            &scope,
            Path::new("/home/u/.stud/settings.json"),
        )
    }

    #[test]
    fn both_transports_parse_in_the_shape_users_have() {
        let (ok, errors) = parse(
            json!({
                "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"DEBUG": "1", "TOKEN": {"env": "MY_TOKEN"}}},
                "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
                "off": {"command": "x", "disable": true}
            }),
            McpScope::Global,
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(ok.len(), 2);
        let remote = ok.iter().find(|s| s.id == "remote").unwrap();
        let Transport::Http { headers, .. } = &remote.transport else {
            panic!("{remote:?}")
        };
        let auth = &headers["Authorization"];
        assert_eq!(auth.shown(), "Bearer ${GH_TOKEN}");
        assert_eq!(
            auth.resolve(|n| (n == "GH_TOKEN").then(|| "t0k".into())),
            Ok("Bearer t0k".into())
        );
        assert_eq!(auth.resolve(|_| None), Err("GH_TOKEN".into()));
    }

    #[test]
    fn bad_entries_name_the_server_and_the_field() {
        let (ok, errors) = parse(
            json!({
                "good": {"command": "srv"},
                "no-command": {"args": ["x"]},
                "bad url": {"type": "http", "url": "https://x"},
                "plain": {"type": "http", "url": "http://example.com/mcp"},
                "mixed": {"command": "x", "url": "https://x"},
                "typo": {"command": "x", "argz": []},
                "old": {"type": "sse", "url": "https://x"},
                "badref": {"command": "x", "env": {"A": "${1X}"}},
                "hasty": {"command": "x", "startTimeoutMs": 5}
            }),
            McpScope::Global,
        );
        assert_eq!(ok.len(), 1);
        let by: BTreeMap<&str, &ConfigError> =
            errors.iter().map(|e| (e.server.as_str(), e)).collect();
        assert_eq!(by["no-command"].field, "command");
        assert_eq!(by["bad url"].field, "id");
        assert_eq!(by["plain"].field, "url");
        assert_eq!(by["mixed"].field, "command");
        assert_eq!(by["typo"].field, "argz");
        assert!(by["old"].reason.contains("streamable HTTP"));
        assert_eq!(by["badref"].field, "env.A");
        assert_eq!(by["hasty"].field, "startTimeoutMs");
        let text = by["no-command"].to_string();
        assert!(
            text.contains("`no-command`")
                && text.contains("settings.json")
                && text.contains("`command`"),
            "{text}"
        );
    }

    #[test]
    fn a_project_file_may_not_hold_a_secret() {
        let project = McpScope::Project(PathBuf::from("/repo"));
        let (ok, errors) = parse(
            json!({
                "leaky": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_123"}},
                "leaky-http": {"type": "http", "url": "https://x.example/mcp", "headers": {"X-Api": "abc"}},
                "fine": {"command": "x", "env": {"DEBUG": "1", "GITHUB_TOKEN": {"env": "GITHUB_TOKEN"}}}
            }),
            project,
        );
        assert_eq!(ok.len(), 1, "{errors:?}");
        assert_eq!(errors.len(), 2);
        assert!(errors.iter().all(|e| e.reason.contains("literal value")));
    }

    #[test]
    fn the_users_own_literals_stay_masked_and_references_show() {
        let (ok, _) = parse(
            json!({"s": {"command": "srv", "env": {"A": "secret-literal", "KEY": "${ANTHROPIC_API_KEY}"}},
                   "h": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${T}", "X": "lit"}}}),
            McpScope::Global,
        );
        let d: BTreeMap<&str, String> = ok.iter().map(|s| (s.id.as_str(), s.describe())).collect();
        assert_eq!(d["s"], "srv (env: A=<literal>, KEY=${ANTHROPIC_API_KEY})");
        assert_eq!(
            d["h"],
            "https://x.example/mcp (headers: Authorization='Bearer ${T}', X=<literal>)"
        );
    }

    /// What a repository asks to run is shown as it would run: values in
    /// full, one argument never passing for two, nothing hidden by
    /// terminal controls; and what changes which code runs is named.
    #[test]
    fn a_projects_values_are_shown_in_full_and_the_dangerous_ones_named() {
        let (ok, errors) = parse(
            json!({"s": {
                "command": "node",
                "args": ["server.js", "two words", "it's", "", "a\nb", "x\u{1b}]52;c;eA==\u{7}", "r\u{202e}txt"],
                "env": {"LD_PRELOAD": "/tmp/evil.so", "NODE_OPTIONS": "--require ./x.js", "DEBUG": "1"}
            }}),
            McpScope::Project(PathBuf::from("/repo")),
        );
        assert!(errors.is_empty(), "{errors:?}");
        let s = &ok[0];
        assert_eq!(
            s.describe(),
            "node server.js 'two words' 'it'\\''s' '' 'a\\nb' 'x\\u{1b}]52;c;eA==\\u{7}' 'r\\u{202e}txt' (env: DEBUG=1, LD_PRELOAD=/tmp/evil.so, NODE_OPTIONS='--require ./x.js')"
        );
        assert_eq!(
            s.warnings(),
            [
                "`LD_PRELOAD` changes which code the server runs",
                "`NODE_OPTIONS` changes which code the server runs"
            ]
        );
        // The same entry from the user's own settings: masked, still named.
        let (ok, _) = parse(
            json!({"s": {"command": "node", "env": {"LD_PRELOAD": "/g.so"}}}),
            McpScope::Global,
        );
        assert_eq!(ok[0].describe(), "node (env: LD_PRELOAD=<literal>)");
        assert_eq!(ok[0].warnings().len(), 1);
    }

    /// `trustReadOnlyHints` counts only in the user's global settings, and
    /// every listing says what it does or that it is ignored.
    #[test]
    fn only_the_users_settings_make_read_only_hints_count() {
        let entry = json!({"s": {"command": "srv", "trustReadOnlyHints": true}});
        let (global, _) = parse(entry.clone(), McpScope::Global);
        assert!(global[0].hints_trusted());
        assert!(global[0].warnings()[0].contains("run without asking"));
        for scope in [
            McpScope::Project(PathBuf::from("/repo")),
            McpScope::Editor(PathBuf::from("/repo")),
        ] {
            let (ok, _) = parse(entry.clone(), scope);
            assert!(!ok[0].hints_trusted());
            assert!(
                ok[0].warnings()[0].contains("is ignored"),
                "{:?}",
                ok[0].warnings()
            );
        }
    }

    /// `__` separates server and tool in `mcp__<server>__<tool>`: an id
    /// with it is refused by name, wherever it is written.
    #[test]
    fn a_server_id_with_the_separator_is_refused() {
        for scope in [
            McpScope::Global,
            McpScope::Project(PathBuf::from("/repo")),
            McpScope::Editor(PathBuf::from("/repo")),
        ] {
            let (ok, errors) = parse(
                json!({"github__x": {"command": "srv"}, "github_x": {"command": "srv"}, "a___b": {"command": "srv"}}),
                scope,
            );
            assert_eq!(ok.len(), 1, "{errors:?}");
            assert_eq!(ok[0].id, "github_x");
            assert_eq!(errors.len(), 2);
            let text = errors
                .iter()
                .find(|e| e.server == "github__x")
                .unwrap()
                .to_string();
            assert!(
                text.contains("MCP server `github__x`")
                    && text.contains("settings.json")
                    && text.contains("`__`"),
                "{text}"
            );
        }
        assert!(!valid_server_id("a__b") && valid_server_id("a_b") && valid_server_id("a-b"));
    }

    #[test]
    fn the_digest_changes_with_what_runs_and_where_it_is_trusted() {
        let one = |v: Value, scope: McpScope| parse(json!({"s": v}), scope).0.remove(0);
        let a = one(json!({"command": "srv", "args": ["--a"]}), McpScope::Global);
        let same = one(json!({"command": "srv", "args": ["--a"]}), McpScope::Global);
        let edited = one(json!({"command": "srv", "args": ["--b"]}), McpScope::Global);
        let elsewhere = one(
            json!({"command": "srv", "args": ["--a"]}),
            McpScope::Project(PathBuf::from("/repo")),
        );
        assert_eq!(a.digest(), same.digest());
        assert_ne!(a.digest(), edited.digest());
        assert_ne!(a.digest(), elsewhere.digest());
    }
}
