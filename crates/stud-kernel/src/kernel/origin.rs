//! Where a session ran: the machine and the account, written into its
//! manifest so a store several machines share can say whose it is.

use std::sync::OnceLock;

/// The machine's host name (`STUD_MACHINE` overrides it: containers and
/// CI runners often share a generic one).
pub fn machine() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        std::env::var("STUD_MACHINE")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .map(|n| n.trim().to_string())
            .unwrap_or_default()
    })
}

/// The account's name, as the shell knows it.
pub fn user() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        ["USER", "LOGNAME", "USERNAME"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .unwrap_or_default()
    })
}
