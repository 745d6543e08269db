//! Host imports, one file per capability. [`HostInterface`] is the one
//! permission switch: every `stud:extension` import an extension can have
//! is listed there with the grant it needs, and the linker links only what
//! the extension's kind allows and its grants cover.

mod base;
pub mod confine;
pub mod files;
pub mod fs_policy;
pub mod http;
mod interaction;
pub mod process;
mod secrets;
mod session;
pub mod socket;
mod terminal;

use crate::manifest::{Capabilities, Kind};

/// Every host interface of contract 0.1.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostInterface {
    Types,
    Log,
    Events,
    State,
    Config,
    Clock,
    Cancel,
    Interaction,
    Terminal,
    Secrets,
    Http,
    Process,
    /// Since 0.1.1: the running session, for commands.
    Session,
    /// Since 0.1.2: many files read at once, for tools granted a folder.
    Files,
    /// Since 0.1.4: TCP to granted hosts and ports, for tools and session
    /// stores.
    Socket,
    /// Types-only interfaces of a kind (`tool-types`, ...): nothing to link.
    KindTypes,
}

/// What linking an interface needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Every extension of a kind whose world imports it.
    Always,
    /// Only with this manifest capability; `manifest_line` says how to ask.
    Capability {
        name: &'static str,
        manifest_line: &'static str,
    },
    /// The kind's world does not import it.
    NotInWorld,
    /// Part of the contract but not provided by this build of stud.
    Unavailable { why: &'static str },
}

impl HostInterface {
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "types" => Self::Types,
            "log" => Self::Log,
            "events" => Self::Events,
            "state" => Self::State,
            "config" => Self::Config,
            "clock" => Self::Clock,
            "cancel" => Self::Cancel,
            "interaction" => Self::Interaction,
            "terminal" => Self::Terminal,
            "secrets" => Self::Secrets,
            "http" => Self::Http,
            "process" => Self::Process,
            "session" => Self::Session,
            "files" => Self::Files,
            "socket" => Self::Socket,
            n if n.ends_with("-types") => Self::KindTypes,
            _ => return None,
        })
    }

    /// The decision for one extension: its kind's world, then its grants.
    pub fn gate(self, kind: Kind, caps: &Capabilities) -> Gate {
        use HostInterface::*;
        let in_world = match self {
            Types | Log | Events | State | Config | Clock | Cancel | KindTypes => true,
            Interaction => matches!(kind, Kind::Tool | Kind::Command | Kind::Ui),
            Terminal => kind == Kind::Ui,
            Secrets => matches!(kind, Kind::Provider | Kind::SessionStore),
            Http => matches!(kind, Kind::Provider | Kind::Tool),
            Process => matches!(kind, Kind::Tool | Kind::Hook),
            Files => kind == Kind::Tool,
            Session => kind == Kind::Command,
            Socket => matches!(kind, Kind::Tool | Kind::SessionStore),
        };
        if !in_world {
            return Gate::NotInWorld;
        }
        match self {
            Secrets if caps.secrets.is_empty() => Gate::Capability {
                name: "secrets",
                manifest_line: "secrets = [\"NAME\"]",
            },
            Http if caps.network.is_empty() && !caps.user_hosts => Gate::Capability {
                name: "network",
                manifest_line: "network = [\"host.example\"] (or user-hosts = true)",
            },
            Files if caps.filesystem.is_empty() => Gate::Capability {
                name: "filesystem",
                manifest_line: "filesystem = [{ dir = \"project\", access = \"read\" }]",
            },
            Socket if caps.sockets.is_empty() => Gate::Capability {
                name: "sockets",
                manifest_line: "sockets = [\"db.example.com:5432\"] (or \"*:5432\": a host you grant)",
            },
            Process if !caps.exec => Gate::Capability {
                name: "exec",
                manifest_line: "exec = true",
            },
            _ => Gate::Always,
        }
    }
}
