//! A session store: each session is a folder in the extension's data
//! folder with `log.jsonl` (records, appended) and `manifest.json`
//! (replaced atomically through a temporary file).

use std::fs::{self, OpenOptions};
use std::io::Write as _;

use stud_sdk::prelude::*;
use stud_sdk::session_manifest::ManifestSummary;

const ROOT: &str = "/data";

#[derive(Default)]
struct Folders;

fn io(what: &str, path: &str) -> impl FnOnce(std::io::Error) -> Error {
    let text = format!("cannot {what} {path}");
    move |e| Error::internal(format!("{text}: {e}"))
}

/// A session id becomes a folder name: anything but `[A-Za-z0-9_-]` is
/// refused, so an id cannot leave the data folder.
fn folder(session_id: &str) -> Result<String, Error> {
    let ok = !session_id.is_empty()
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(Error::invalid_input(format!(
            "session id `{session_id}` is not a plain name"
        )));
    }
    Ok(format!("{ROOT}/{session_id}"))
}

impl SessionStore for Folders {
    fn append(&mut self, session_id: &str, records: Vec<String>) -> Result<(), Error> {
        let dir = folder(session_id)?;
        fs::create_dir_all(&dir).map_err(io("create", &dir))?;
        let path = format!("{dir}/log.jsonl");
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        let mut text = String::new();
        for r in records {
            text.push_str(&r);
            text.push('\n');
        }
        f.write_all(text.as_bytes()).map_err(io("write", &path))?;
        f.sync_data().map_err(io("sync", &path))
    }

    fn write_manifest(&mut self, session_id: &str, manifest: String) -> Result<(), Error> {
        let dir = folder(session_id)?;
        fs::create_dir_all(&dir).map_err(io("create", &dir))?;
        let (tmp, path) = (
            format!("{dir}/manifest.tmp"),
            format!("{dir}/manifest.json"),
        );
        fs::write(&tmp, manifest).map_err(io("write", &tmp))?;
        fs::rename(&tmp, &path).map_err(io("replace", &path))
    }

    fn read(&mut self, session_id: &str) -> Result<SessionData, Error> {
        let dir = folder(session_id)?;
        let path = format!("{dir}/manifest.json");
        let manifest = fs::read_to_string(&path)
            .map_err(|_| Error::not_found(format!("no session `{session_id}` in this store")))?;
        let log = format!("{dir}/log.jsonl");
        let records = fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            // A line cut short by a crash is dropped, not fatal.
            .filter(|l| serde_json::from_str::<Value>(l).is_ok())
            .map(str::to_string)
            .collect();
        Ok(SessionData { manifest, records })
    }

    fn list(&mut self) -> Result<Vec<SessionSummary>, Error> {
        let mut out = Vec::new();
        for entry in fs::read_dir(ROOT).into_iter().flatten().flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            let Ok(data) = self.read(&id) else { continue };
            // What the kernel's manifest says the session is.
            let m = ManifestSummary::parse(&data.manifest).unwrap_or_default();
            out.push(SessionSummary {
                session_id: id.clone(),
                project_root: m.project_root,
                created_ms: m.created_ms,
                updated_ms: m.updated_ms,
                title: m.title,
            });
        }
        Ok(out)
    }

    fn delete(&mut self, session_id: &str) -> Result<(), Error> {
        let dir = folder(session_id)?;
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", &dir)(e)),
            _ => Ok(()),
        }
    }
}

stud_sdk::export_session_store!(Folders);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_cannot_leave_the_data_folder() {
        assert!(folder("../../etc").is_err());
        assert!(folder("").is_err());
        assert_eq!(folder("abc-1").expect("plain"), "/data/abc-1");
    }
}
