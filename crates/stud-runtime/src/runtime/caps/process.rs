//! `process`: run a command for a tool granted `exec`. The command runs in
//! the project directory (or a folder inside it), with a small allowlisted
//! environment (no API keys), a timeout, and each output stream capped.
//! Where the kernel has Landlock the process writes only inside the
//! project (see `confine`); it still runs with the user's rights otherwise,
//! so the approval stack gates the tool call that gets here. Time spent
//! waiting does not count against the guest's own deadline. The command
//! leads a process group of its own, so a timeout or a cancelled turn kills
//! everything it started, not just the shell; output still held open by a
//! process that left the group is read for a short grace, then abandoned.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::confine::{Applied, confine};
use crate::runtime::contract::v0_1::stud::extension::process::{
    self as p, ProcessOutput, SpawnRequest,
};
use crate::runtime::host_state::{HostState, PROJECT_GUEST_DIR};
use crate::runtime::services::{ErrorClass, ExtError, LogLevel, ext_error};

/// Default and largest command timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// Bytes kept per output stream.
pub const OUTPUT_CAP: usize = 256 * 1024;
/// How long output is still read once the command has ended: a process it
/// put in the background (or that escaped its group) may hold the pipes
/// open for ever.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// The only environment variables a command sees (when set for stud).
const ENV_ALLOWLIST: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR",
    "SHELL",
];

fn denied(message: String) -> ExtError {
    ext_error(ErrorClass::ToolTerminal, "forbidden", message)
}

/// The user's `PATH` without the entries a repository could fill: empty
/// and relative ones (the command's folder, `node_modules/.bin`) and
/// folders inside the project. Otherwise an approved `git status` could
/// run the repository's own `./git`.
fn search_path(path: Option<std::ffi::OsString>, project: &Path) -> Option<std::ffi::OsString> {
    let path = path?;
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            !real.starts_with(project)
        })
        .collect();
    std::env::join_paths(kept).ok()
}

/// `program` looked up in `PATH` when it has no `/`. The standard library
/// does this itself, but only by forking (it will not `posix_spawn` a name
/// when the child's environment was changed), and a fork copies all of
/// stud's mappings: 15-25 ms here against about 1 ms.
fn resolve(program: &str, search: Option<&std::ffi::OsStr>) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    search
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.metadata().is_ok_and(|m| executable(&m)))
        .unwrap_or_else(|| PathBuf::from(program))
}

fn executable(m: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        m.is_file()
    }
}

/// `cwd` resolved inside the project, refusing escapes.
fn working_dir(project: &Path, cwd: Option<&str>) -> Result<PathBuf, ExtError> {
    let Some(rel) = cwd.filter(|c| !c.is_empty() && *c != ".") else {
        return Ok(project.to_path_buf());
    };
    let rel = rel
        .strip_prefix(PROJECT_GUEST_DIR)
        .map(|r| r.trim_start_matches('/'))
        .unwrap_or(rel);
    let mut out = project.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return Err(denied(format!("cwd `{rel}` leaves the project directory"))),
        }
    }
    let real = out.canonicalize().map_err(|e| {
        ext_error(
            ErrorClass::ToolTerminal,
            "not-found",
            format!("cwd `{rel}`: {e}"),
        )
    })?;
    if !real.starts_with(project) {
        return Err(denied(format!(
            "cwd `{rel}` resolves outside the project directory"
        )));
    }
    Ok(real)
}

/// Read until end of stream or `stop`, keeping the first [`OUTPUT_CAP`]
/// bytes.
async fn read_capped(mut r: impl AsyncRead + Unpin, stop: CancellationToken) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 8192];
    loop {
        let read = tokio::select! {
            read = r.read(&mut buf) => read,
            _ = stop.cancelled() => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (kept, truncated)
}

/// Kill the command's whole process group (it leads one, see `run`).
fn kill_group(child: &tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals that process group;
        // the group is the child's own (it was started as its leader).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

impl p::Host for HostState {
    async fn run(
        &mut self,
        req: SpawnRequest,
    ) -> wasmtime::Result<Result<ProcessOutput, ExtError>> {
        if let Err(message) = self.effects_allowed("process.run") {
            return Ok(Err(denied(message)));
        }
        let Some(project) = self
            .ext
            .dirs
            .iter()
            .find(|d| d.guest == PROJECT_GUEST_DIR)
            .map(|d| d.host.clone())
        else {
            return Ok(Err(denied(format!(
                "extension `{}` may run processes but has no project directory grant; add filesystem = [{{ dir = \"project\", access = \"read-write\" }}]",
                self.ext.id
            ))));
        };
        let project = project.canonicalize().unwrap_or(project);
        let search = search_path(std::env::var_os("PATH"), &project);
        let cwd = match working_dir(&project, req.cwd.as_deref()) {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let mut cmd = match &req.command {
            p::Command::Argv(argv) => {
                let Some((program, args)) = argv.split_first() else {
                    return Ok(Err(ext_error(
                        ErrorClass::ToolTerminal,
                        "input-invalid",
                        "empty command",
                    )));
                };
                let mut c = Command::new(resolve(program, search.as_deref()));
                c.args(args);
                c
            }
            p::Command::Shell(line) => {
                let mut c = Command::new(resolve("sh", search.as_deref()));
                c.arg("-c").arg(line);
                c
            }
        };
        cmd.current_dir(&cwd).env_clear().kill_on_drop(true);
        for var in ENV_ALLOWLIST {
            let value = match *var {
                "PATH" => search.clone(),
                _ => std::env::var_os(var),
            };
            if let Some(v) = value {
                cmd.env(var, v);
            }
        }
        cmd.stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        match confine(&mut cmd, &self.ext.processes, &project) {
            // The confined child calls setsid, which makes it a group leader.
            Ok(Applied::Confined) => {}
            Ok(applied @ (Applied::Unsupported | Applied::Off)) => {
                if applied == Applied::Unsupported {
                    static SAID: AtomicBool = AtomicBool::new(false);
                    if !SAID.swap(true, Ordering::Relaxed) {
                        self.ext.services.log(
                            &self.ext.id,
                            LogLevel::Warn,
                            "this kernel has no Landlock: processes run with your full rights, not confined to the project (runtime.processSandbox)",
                        );
                    }
                }
                // A group of its own (posix_spawn can still do this).
                #[cfg(unix)]
                cmd.process_group(0);
            }
            Err(e) => {
                return Ok(Err(ext_error(
                    ErrorClass::ToolTerminal,
                    "sandbox-failed",
                    format!(
                        "cannot confine the command to the project: {e}; set runtime.processSandbox.mode to \"off\" in settings.json to run it unconfined"
                    ),
                )));
            }
        }
        let timeout = req
            .timeout_ms
            .map(|ms| Duration::from_millis(u64::from(ms)))
            .unwrap_or(DEFAULT_TIMEOUT)
            .min(MAX_TIMEOUT);
        // The process has its own timeout: the guest's clock stands still.
        let paused = self.deadline.pause();
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return Ok(Err(ext_error(
                    ErrorClass::ToolTerminal,
                    "spawn-failed",
                    format!("cannot start the command: {e}"),
                )));
            }
        };
        if let (Some(input), Some(mut stdin)) = (req.stdin, child.stdin.take()) {
            tokio::spawn(async move {
                let _ = stdin.write_all(&input).await;
            });
        }
        let stop = CancellationToken::new();
        let stdout = (child.stdout.take()).map(|o| tokio::spawn(read_capped(o, stop.clone())));
        let stderr = (child.stderr.take()).map(|e| tokio::spawn(read_capped(e, stop.clone())));
        let cancelled = self.deadline.cancelled();
        let (exit_code, timed_out) = tokio::select! {
            status = child.wait() => (status.ok().and_then(|s| s.code()), false),
            _ = tokio::time::sleep(timeout) => {
                kill_group(&child);
                let _ = child.kill().await;
                (None, true)
            }
            _ = cancelled => {
                kill_group(&child);
                let _ = child.kill().await;
                (None, false)
            }
        };
        let give_up = {
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep(DRAIN_GRACE).await;
                stop.cancel();
            })
        };
        let collect = |h: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>| async move {
            match h {
                Some(h) => h.await.unwrap_or_default(),
                None => (Vec::new(), false),
            }
        };
        let (stdout, stdout_truncated) = collect(stdout).await;
        let (stderr, stderr_truncated) = collect(stderr).await;
        give_up.abort();
        drop(paused);
        Ok(Ok(ProcessOutput {
            exit_code,
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
            timed_out,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_path_and_paths_kept() {
        let project = tempfile::tempdir().unwrap();
        let search = search_path(std::env::var_os("PATH"), project.path());
        let sh = resolve("sh", search.as_deref());
        assert!(sh.is_absolute() && sh.is_file(), "{}", sh.display());
        assert_eq!(resolve("./run.sh", None), PathBuf::from("./run.sh"));
        // Not found: left to the spawn, which reports it.
        assert_eq!(
            resolve("no-such-program-4711", search.as_deref()),
            PathBuf::from("no-such-program-4711")
        );
    }

    #[test]
    fn the_search_path_keeps_nothing_a_repository_could_fill() {
        let project = tempfile::tempdir().unwrap();
        let bin = project.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let kept = |path: &str| {
            search_path(Some(path.into()), project.path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let joined = format!(".::node_modules/.bin:{}:/usr/bin:/bin", bin.display());
        assert_eq!(kept(&joined), "/usr/bin:/bin");
    }

    #[test]
    fn cwd_stays_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap();
        std::fs::create_dir(project.join("sub")).unwrap();
        assert_eq!(working_dir(&project, None).unwrap(), project);
        assert_eq!(
            working_dir(&project, Some("sub")).unwrap(),
            project.join("sub")
        );
        assert_eq!(
            working_dir(&project, Some("/project/sub")).unwrap(),
            project.join("sub")
        );
        assert!(working_dir(&project, Some("../")).is_err());
        assert!(working_dir(&project, Some("/etc")).is_err());
        std::os::unix::fs::symlink("/", project.join("root")).unwrap();
        assert!(working_dir(&project, Some("root")).is_err());
    }
}
