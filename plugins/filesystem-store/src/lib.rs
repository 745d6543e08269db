//! `filesystem`: one folder per session in the store's data folder:
//! `log.jsonl` (append-only, one record per line, synced before `append`
//! returns) and `manifest.json` (written to a temporary file, synced, then
//! renamed over the old one). A crash can at worst leave a torn last line
//! in the log, which was never confirmed and is skipped on read.
//!
//! The log of the session being written stays open between appends, so an
//! append costs one write (and one sync) rather than an open and a seek.
//! Writes go through `pwrite` at a known offset (see [`write_all_at`]).

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use stud_sdk::prelude::*;
use stud_sdk::session_manifest::ManifestSummary;

const ROOT: &str = "/data";

#[derive(Default)]
struct Store {
    /// Sync data to disk before confirming (default on).
    fsync: bool,
    /// The log appended to last.
    open: Option<OpenLog>,
}

struct OpenLog {
    session_id: String,
    file: fs::File,
    /// Where the next record goes: the log's length. Only this process
    /// writes the log (the kernel holds the session's lock).
    end: u64,
}

/// Write all of `buf` at `offset`. `pwrite` is one direct call into the
/// host (`descriptor.write`), which runs it inline; `write` goes through
/// an output stream that the host serves on a thread of its blocking pool,
/// a hand-over and a wake-up per call.
fn write_all_at(file: &fs::File, mut buf: &[u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    while !buf.is_empty() {
        let at = libc::off_t::try_from(offset)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        // SAFETY: `buf` is valid for `buf.len()` bytes, and the descriptor
        // is open for as long as `file` is borrowed.
        let n = unsafe { libc::pwrite(file.as_raw_fd(), buf.as_ptr().cast(), buf.len(), at) };
        match usize::try_from(n) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n.min(buf.len())..];
                offset += n as u64;
            }
            Err(_) => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

fn dir(session_id: &str) -> Result<PathBuf, Error> {
    let ok = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok {
        return Err(Error::invalid_input(format!(
            "`{session_id}` is not a session id (letters, digits, - and _)"
        )));
    }
    Ok(Path::new(ROOT).join(session_id))
}

/// Whether the file is non-empty and does not end with a newline.
fn ends_torn(f: &mut fs::File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    f.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// Open a session's log for appending (creating its folder): the file,
/// its length, and whether its last line was torn.
fn open_log(path: &Path) -> Result<(fs::File, u64, bool), Error> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .read(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io(path, e))?;
    let torn = ends_torn(&mut file).map_err(|e| io(path, e))?;
    let end = file.metadata().map_err(|e| io(path, e))?.len();
    Ok((file, end, torn))
}

/// Make a rename or a new file in `dir` durable. Best effort: where the
/// platform cannot sync a directory the data itself is still synced.
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorClass::Session,
        "store-io",
        format!("`{}`: {e}", path.display()),
    )
}

impl SessionStore for Store {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.fsync = config["fsync"].as_bool().unwrap_or(true);
        Ok(())
    }

    fn append(&mut self, session_id: &str, records: Vec<String>) -> Result<(), Error> {
        let path = dir(session_id)?.join("log.jsonl");
        let mut text = String::new();
        for r in records {
            // One record per line: compact JSON has no raw newlines.
            if r.contains('\n') {
                return Err(Error::invalid_input("a record spans several lines"));
            }
            text.push_str(&r);
            text.push('\n');
        }
        // Taken out, and put back only after a good write: after a failed
        // one the next append reopens the file and checks its last line.
        let (file, end) = match self.open.take() {
            Some(log) if log.session_id == session_id => (log.file, log.end),
            _ => {
                let (file, end, torn) = open_log(&path)?;
                // A line torn by a crash must not swallow the next record.
                if torn {
                    text.insert(0, '\n');
                }
                (file, end)
            }
        };
        write_all_at(&file, text.as_bytes(), end).map_err(|e| io(&path, e))?;
        if self.fsync {
            file.sync_data().map_err(|e| io(&path, e))?;
        }
        self.open = Some(OpenLog {
            session_id: session_id.to_string(),
            file,
            end: end + text.len() as u64,
        });
        Ok(())
    }

    fn write_manifest(&mut self, session_id: &str, manifest: String) -> Result<(), Error> {
        let dir = dir(session_id)?;
        // The folder of the session whose log is open exists: skip the
        // walk (each path call is a capability-checked lookup).
        if self
            .open
            .as_ref()
            .is_none_or(|o| o.session_id != session_id)
        {
            fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        }
        let value: Value = serde_json::from_str(&manifest)?;
        let text = serde_json::to_string_pretty(&value)?;
        let tmp = dir.join("manifest.json.tmp");
        let path = dir.join("manifest.json");
        {
            let f = fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
            write_all_at(&f, text.as_bytes(), 0).map_err(|e| io(&tmp, e))?;
            if self.fsync {
                f.sync_all().map_err(|e| io(&tmp, e))?;
            }
        }
        fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
        if self.fsync {
            sync_dir(&dir);
        }
        Ok(())
    }

    fn read(&mut self, session_id: &str) -> Result<SessionData, Error> {
        let dir = dir(session_id)?;
        let path = dir.join("manifest.json");
        let manifest = fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::new(
                    ErrorClass::Session,
                    "not-found",
                    format!("no session `{session_id}` in this store (see `stud session list`)"),
                )
            } else {
                io(&path, e)
            }
        })?;
        let log = dir.join("log.jsonl");
        // Bytes, not text: a line torn by a crash may end inside a UTF-8
        // character, and that must cost only that line, never the session.
        let bytes = match fs::read(&log) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(&log, e)),
        };
        let records = bytes
            .split(|b| *b == b'\n')
            // A torn line (the process died while writing it, so it was
            // never confirmed) is left out.
            .filter(|line| serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok())
            .filter_map(|line| std::str::from_utf8(line).ok())
            .map(str::to_string)
            .collect();
        Ok(SessionData { manifest, records })
    }

    fn list(&mut self) -> Result<Vec<SessionSummary>, Error> {
        let root = Path::new(ROOT);
        let mut out = Vec::new();
        let Ok(entries) = fs::read_dir(root) else {
            return Ok(out);
        };
        for entry in entries.flatten() {
            let Ok(text) = fs::read_to_string(entry.path().join("manifest.json")) else {
                continue;
            };
            let Ok(m) = ManifestSummary::parse(&text) else {
                continue;
            };
            out.push(SessionSummary {
                session_id: m.session_id,
                project_root: m.project_root,
                created_ms: m.created_ms,
                updated_ms: m.updated_ms,
                title: m.title,
            });
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        Ok(out)
    }

    fn delete(&mut self, session_id: &str) -> Result<(), Error> {
        let dir = dir(session_id)?;
        if self
            .open
            .as_ref()
            .is_some_and(|log| log.session_id == session_id)
        {
            self.open = None;
        }
        if !dir.is_dir() {
            return Err(Error::new(
                ErrorClass::Session,
                "not-found",
                format!("no session `{session_id}` in this store"),
            ));
        }
        fs::remove_dir_all(&dir).map_err(|e| io(&dir, e))
    }
}

stud_sdk::export_session_store!(Store);
