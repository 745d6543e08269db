//! `[capabilities]`: everything an extension may reach beyond its own
//! memory. Absent means none; the linker links host interfaces only for
//! what is granted here, and some grants are limited to the kinds whose
//! job needs them.

use std::collections::{HashMap, HashSet};

use super::fields::{Fields, as_str, as_table};
use super::host_pattern::HostPattern;
use super::kind::Kind;
use super::problems::{Problems, quote};
use super::socket_request::SocketRequest;
use stud_protocol::text_enum;

pub(crate) const KNOWN: &[&str] = &[
    "filesystem",
    "network",
    "user-hosts",
    "exec",
    "secrets",
    "sockets",
];
const FS_KNOWN: &[&str] = &["dir", "access"];
const FS_EXAMPLE: &str = "filesystem = [{ dir = \"project\", access = \"read\" }]";
const MAX_SECRET_LEN: usize = 128;

/// Only these kinds talk to the network (model APIs, web tools).
pub const NETWORK_KINDS: &[Kind] = &[Kind::Provider, Kind::Tool];
/// Only tools run processes, and only when the person allows the call.
/// Hooks since contract 0.1.3: `command-hooks` runs the person's hook
/// commands (as the bash tool runs commands, under the same confinement).
pub const EXEC_KINDS: &[Kind] = &[Kind::Tool, Kind::Hook];
/// Only providers hold API keys, and session stores their database's
/// password (since contract 0.1.4).
pub const SECRETS_KINDS: &[Kind] = &[Kind::Provider, Kind::SessionStore];
/// Only tools and session stores open sockets (contract 0.1.4): a store on
/// a database server, a tool that speaks a database's protocol.
pub const SOCKET_KINDS: &[Kind] = &[Kind::Tool, Kind::SessionStore];

text_enum! {
    /// A directory the host can preopen for the extension.
    pub enum FsDir("filesystem dir") {
        /// The project the agent works in.
        Project = "project",
        /// The extension's private data folder.
        Data = "data",
    }
}

text_enum! {
    /// How much of a granted directory the extension may touch.
    pub enum FsAccess("filesystem access") {
        Read = "read",
        ReadWrite = "read-write",
    }
}

/// One `filesystem` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FsRequest {
    pub dir: FsDir,
    pub access: FsAccess,
}

/// Everything an extension asked for; `Default` is nothing at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Capabilities {
    pub filesystem: Vec<FsRequest>,
    pub network: Vec<HostPattern>,
    /// Also hosts the user grants in settings (`network.<id>`, and a
    /// provider's `baseUrl`): for extensions whose hosts are the user's
    /// choice (web fetching, self-hosted model servers).
    pub user_hosts: bool,
    pub exec: bool,
    /// Environment/secret-store names, e.g. `OPENAI_API_KEY`.
    pub secrets: Vec<String>,
    /// Hosts and ports it may open TCP connections to (contract 0.1.4).
    pub sockets: Vec<SocketRequest>,
}

/// Reads `[capabilities]`; kind restrictions are checked when `kind` is
/// known (an unknown kind is already its own problem).
pub(crate) fn read_capabilities(
    fields: Option<Fields<'_>>,
    kind: Option<Kind>,
    p: &mut Problems,
) -> Capabilities {
    let mut caps = Capabilities::default();
    let Some(fields) = fields else {
        return caps;
    };
    if let Some(entries) = fields.array("filesystem", FS_EXAMPLE, p) {
        caps.filesystem = read_filesystem(&fields, entries, p);
    }
    if let Some(entries) = fields.array("network", "network = [\"api.example.com\"]", p) {
        check_kind(&fields, &NETWORK, !entries.is_empty(), kind, p);
        caps.network = read_network(&fields, entries, p);
    }
    if let Some(user_hosts) = fields.boolean("user-hosts", "user-hosts = true", p) {
        check_kind(&fields, &USER_HOSTS, user_hosts, kind, p);
        caps.user_hosts = user_hosts;
    }
    if let Some(exec) = fields.boolean("exec", "exec = true", p) {
        check_kind(&fields, &EXEC, exec, kind, p);
        caps.exec = exec;
    }
    if let Some(entries) = fields.array("secrets", "secrets = [\"OPENAI_API_KEY\"]", p) {
        check_kind(&fields, &SECRETS, !entries.is_empty(), kind, p);
        caps.secrets = read_secrets(&fields, entries, p);
    }
    if let Some(entries) = fields.array("sockets", "sockets = [\"db.example.com:5432\"]", p) {
        check_kind(&fields, &SOCKETS, !entries.is_empty(), kind, p);
        caps.sockets = read_sockets(&fields, entries, p);
    }
    fields.unknown_keys(KNOWN, p);
    caps
}

fn read_sockets(
    fields: &Fields<'_>,
    entries: &[toml::Value],
    p: &mut Problems,
) -> Vec<SocketRequest> {
    let mut out: Vec<SocketRequest> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{}[{i}]", fields.path("sockets"));
        let Some(text) = as_str(entry, &at, "\"db.example.com:5432\"", p) else {
            continue;
        };
        match text.parse::<SocketRequest>() {
            Ok(r) if out.contains(&r) => p.push(at, format!("\"{r}\" is listed twice; remove one")),
            Ok(r) => out.push(r),
            Err(e) => p.push(at, e.to_string()),
        }
    }
    out
}

/// A capability only some kinds may request.
struct KindRule {
    key: &'static str,
    /// Completes "... extensions may not".
    what: &'static str,
    kinds: &'static [Kind],
}

const NETWORK: KindRule = KindRule {
    key: "network",
    what: "request network access",
    kinds: NETWORK_KINDS,
};
const USER_HOSTS: KindRule = KindRule {
    key: "user-hosts",
    what: "request network access",
    kinds: NETWORK_KINDS,
};
const EXEC: KindRule = KindRule {
    key: "exec",
    what: "run processes",
    kinds: EXEC_KINDS,
};
const SOCKETS: KindRule = KindRule {
    key: "sockets",
    what: "open sockets",
    kinds: SOCKET_KINDS,
};
const SECRETS: KindRule = KindRule {
    key: "secrets",
    what: "read secrets",
    kinds: SECRETS_KINDS,
};

fn check_kind(
    fields: &Fields<'_>,
    rule: &KindRule,
    requested: bool,
    kind: Option<Kind>,
    p: &mut Problems,
) {
    let Some(kind) = kind else { return };
    if requested && !rule.kinds.contains(&kind) {
        let allowed: Vec<&str> = rule.kinds.iter().map(|k| k.as_str()).collect();
        let (key, what) = (rule.key, rule.what);
        p.push(
            fields.path(key),
            format!(
                "kind = \"{kind}\" extensions may not {what}; only {} extensions may. Remove `{key}` from [capabilities]",
                allowed.join(" and ")
            ),
        );
    }
}

fn read_filesystem(
    fields: &Fields<'_>,
    entries: &[toml::Value],
    p: &mut Problems,
) -> Vec<FsRequest> {
    let mut out = Vec::new();
    let mut seen: HashMap<FsDir, usize> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{}[{i}]", fields.path("filesystem"));
        let Some(table) = as_table(entry, &at, "{ dir = \"project\", access = \"read\" }", p)
        else {
            continue;
        };
        let entry = Fields::new(table, at);
        let dir = entry
            .required_string("dir", "dir = \"project\"", p)
            .and_then(|text| match text.parse::<FsDir>() {
                Ok(dir) => Some(dir),
                Err(e) => {
                    p.push(entry.path("dir"), e.to_string());
                    None
                }
            });
        let access = entry
            .required_string("access", "access = \"read\"", p)
            .and_then(|text| match text.parse::<FsAccess>() {
                Ok(access) => Some(access),
                Err(e) => {
                    p.push(entry.path("access"), e.to_string());
                    None
                }
            });
        entry.unknown_keys(FS_KNOWN, p);
        if let Some(dir) = dir {
            if let Some(first) = seen.get(&dir) {
                p.push(
                    entry.path("dir"),
                    format!("dir \"{dir}\" is already granted by filesystem[{first}]; list each dir once, with the widest access it needs"),
                );
                continue;
            }
            seen.insert(dir, i);
            if let Some(access) = access {
                out.push(FsRequest { dir, access });
            }
        }
    }
    out
}

fn read_network(
    fields: &Fields<'_>,
    entries: &[toml::Value],
    p: &mut Problems,
) -> Vec<HostPattern> {
    let mut out: Vec<HostPattern> = Vec::new();
    let mut seen: HashSet<HostPattern> = HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{}[{i}]", fields.path("network"));
        let Some(text) = as_str(entry, &at, "\"api.example.com\"", p) else {
            continue;
        };
        match text.parse::<HostPattern>() {
            Ok(pattern) if seen.contains(&pattern) => {
                p.push(at, format!("\"{pattern}\" is listed twice; remove one"));
            }
            Ok(pattern) => {
                seen.insert(pattern.clone());
                out.push(pattern);
            }
            Err(e) => p.push(at, e.to_string()),
        }
    }
    out
}

fn read_secrets(fields: &Fields<'_>, entries: &[toml::Value], p: &mut Problems) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{}[{i}]", fields.path("secrets"));
        let Some(name) = as_str(entry, &at, "\"OPENAI_API_KEY\"", p) else {
            continue;
        };
        if !is_secret_name(name) {
            p.push(
                at,
                format!(
                    "{} is not a secret name; write uppercase letters, digits and underscores starting with a letter (at most {MAX_SECRET_LEN}), e.g. \"OPENAI_API_KEY\"",
                    quote(name)
                ),
            );
        } else if !seen.insert(name) {
            p.push(at, format!("\"{name}\" is listed twice; remove one"));
        } else {
            out.push(name.to_string());
        }
    }
    out
}

/// `^[A-Z][A-Z0-9_]*$`: the portable environment-variable alphabet.
pub fn is_secret_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= MAX_SECRET_LEN
        && bytes.next().is_some_and(|b| b.is_ascii_uppercase())
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        assert!(is_secret_name("OPENAI_API_KEY"));
        assert!(is_secret_name("A1"));
        for bad in ["", "openai_key", "_KEY", "1KEY", "KEY-1", "KEY NAME"] {
            assert!(!is_secret_name(bad), "{bad}");
        }
    }

    #[test]
    fn default_is_nothing() {
        let caps = Capabilities::default();
        assert!(
            caps.filesystem.is_empty()
                && caps.network.is_empty()
                && !caps.user_hosts
                && !caps.exec
                && caps.secrets.is_empty()
        );
    }
}
