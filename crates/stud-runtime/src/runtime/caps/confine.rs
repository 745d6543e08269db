//! Confining the processes tools start (Linux Landlock). A process may
//! read and execute anything the user can, but write only inside the
//! project, the temp folder, `/dev/null`, `/dev/shm` and the folders the
//! user lists in settings (`runtime.processSandbox.writable`), and it
//! starts a session of its own, so it has no controlling terminal to type
//! into. The rules are built in stud before the fork; the child only calls
//! `setsid`, `prctl(no_new_privs)` and `landlock_restrict_self`, which
//! allocate nothing. A guard against mistakes, not a security boundary:
//! docs/contracts.md lists what it does not stop. On a kernel without
//! Landlock (or with only its first version, which cannot allow renames
//! across folders) the process runs unconfined and stud says so once.

use std::path::{Path, PathBuf};

use tokio::process::Command;

/// How processes are confined; from settings, the same for every tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessConfinement {
    /// Writes only in the project, the temp folder and these folders.
    WriteProject { writable: Vec<PathBuf> },
    /// `runtime.processSandbox.mode = "off"`: the user's full rights.
    Off,
}

impl Default for ProcessConfinement {
    fn default() -> Self {
        ProcessConfinement::WriteProject {
            writable: Vec::new(),
        }
    }
}

/// What applies to a process about to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Confined,
    /// Asked for, but the kernel has no Landlock.
    Unsupported,
    Off,
}

/// Set `cmd` up to confine itself before `exec`.
pub fn confine(
    cmd: &mut Command,
    confinement: &ProcessConfinement,
    project: &Path,
) -> std::io::Result<Applied> {
    match confinement {
        ProcessConfinement::Off => Ok(Applied::Off),
        ProcessConfinement::WriteProject { writable } => imp::confine(cmd, project, writable),
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };
    use tokio::process::Command;

    use super::Applied;

    /// The rights handled: every file system right up to ABI 5 (later
    /// kernels enforce these; older ones what they know).
    const ABI_USED: ABI = ABI::V5;

    /// Whether this kernel has Landlock 2 or later (asked once). Version 1
    /// refuses every rename or link between folders, even inside the
    /// project, which breaks `git mv` and package managers.
    fn supported() -> bool {
        static SUPPORTED: OnceLock<bool> = OnceLock::new();
        *SUPPORTED.get_or_init(|| {
            Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(ABI::V2))
                .and_then(|r| r.create())
                .is_ok()
        })
    }

    pub fn confine(
        cmd: &mut Command,
        project: &Path,
        extra: &[PathBuf],
    ) -> std::io::Result<Applied> {
        if !supported() {
            return Ok(Applied::Unsupported);
        }
        let mut writable: Vec<PathBuf> = vec![
            project.to_path_buf(),
            std::env::temp_dir(),
            "/dev/null".into(),
            "/dev/shm".into(),
        ];
        writable.extend(extra.iter().cloned());
        let all = AccessFs::from_all(ABI_USED);
        let ruleset = Ruleset::default()
            .handle_access(all)
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_USED))))
            .and_then(|r| r.add_rules(path_beneath_rules(&writable, all)))
            .map_err(std::io::Error::other)?;
        let mut ruleset = Some(ruleset);
        // SAFETY: between fork and exec the closure makes three system
        // calls (setsid, prctl, landlock_restrict_self) and allocates
        // nothing: the rules were built above, and errors are raw OS errors.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                match ruleset.take() {
                    Some(r) => r
                        .restrict_self()
                        .map(|_| ())
                        .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM)),
                    None => Ok(()),
                }
            });
        }
        Ok(Applied::Confined)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::{Path, PathBuf};

    use tokio::process::Command;

    use super::Applied;

    pub fn confine(_: &mut Command, _: &Path, _: &[PathBuf]) -> std::io::Result<Applied> {
        Ok(Applied::Unsupported)
    }
}
