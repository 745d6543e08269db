//! What an extension may do, in plain words, for the install prompt and
//! `stud ext info`: the folders, hosts, processes and secrets it asked for.

use crate::manifest::{Capabilities, FsAccess, FsDir, FsRequest};

pub fn describe_fs(f: &FsRequest) -> String {
    let what = match f.access {
        FsAccess::Read => "read",
        FsAccess::ReadWrite => "read and write",
    };
    match f.dir {
        FsDir::Project => format!("{what} files in the project folder"),
        FsDir::Data => format!("{what} files in its own data folder"),
    }
}

/// One line per capability; "nothing beyond its own memory" when none.
pub fn describe(caps: &Capabilities) -> Vec<String> {
    let mut out: Vec<String> = caps.filesystem.iter().map(describe_fs).collect();
    for p in &caps.network {
        out.push(format!("connect to {p}"));
    }
    if caps.user_hosts {
        out.push("connect to hosts you grant it in settings (`network.<id>`)".into());
    }
    if caps.exec {
        out.push("run programs in the project folder".into());
    }
    for s in &caps.sockets {
        match &s.host {
            Some(host) => out.push(format!("open TCP connections to {host}")),
            None => out.push(match s.port {
                Some(port) => format!(
                    "open TCP connections on port {port} to hosts you grant it in settings (`sockets.<id>`)"
                ),
                None => "open TCP connections to the hosts and ports you grant it in settings (`sockets.<id>`, or a session store's `url`)".to_string(),
            }),
        }
    }
    for s in &caps.secrets {
        out.push(format!("read the secret {s}"));
    }
    if out.is_empty() {
        out.push("nothing beyond its own memory (no files, network, processes or secrets)".into());
    }
    out
}

/// What `new` may do that `old` could not, in the words of [`describe`].
pub fn added(old: &Capabilities, new: &Capabilities) -> Vec<String> {
    if new == old {
        return Vec::new();
    }
    let before = describe(old);
    let nothing = describe(&Capabilities::default());
    describe(new)
        .into_iter()
        .filter(|line| !before.contains(line) && !nothing.contains(line))
        .collect()
}
