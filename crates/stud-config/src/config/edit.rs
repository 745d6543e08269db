//! Changing one part of a settings file on the person's behalf (a network
//! grant, an allowlist entry): the rest of the file is kept as written, a
//! file stud cannot read is never overwritten, and a change that would
//! make the file invalid is not written.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::Settings;
use crate::atomic_write::write_atomic;

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("cannot read {path}: {reason}")]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path} is not valid JSON ({reason}); fix it first, nothing was written")]
    NotJson {
        path: PathBuf,
        reason: serde_json::Error,
    },
    #[error("{path}: {reason}; fix it first, nothing was written")]
    Shape { path: PathBuf, reason: String },
    #[error("the change would make {path} invalid ({reason}); nothing was written")]
    WouldBeInvalid {
        path: PathBuf,
        reason: serde_json::Error,
    },
    #[error("cannot write {path}: {reason}")]
    Write {
        path: PathBuf,
        reason: std::io::Error,
    },
}

/// Apply `change` to the settings object in `file` (an absent file is
/// `{}`) and write the result atomically. `change` returns what to report
/// and whether anything changed; an `Err` from it (a key of the wrong
/// shape) is reported with the file's name and nothing is written.
pub fn edit_settings<T>(
    file: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(T, bool), String>,
) -> Result<T, EditError> {
    edit_json(file, true, change)
}

/// [`edit_settings`] for a JSON file that is not a settings file
/// (`.mcp.json`): the same reading, shape checks and atomic write, and
/// `settings` says whether the result must read back as settings.
pub fn edit_json<T>(
    file: &Path,
    settings: bool,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(T, bool), String>,
) -> Result<T, EditError> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "{}".into(),
        Err(reason) => {
            return Err(EditError::Read {
                path: file.into(),
                reason,
            });
        }
    };
    let mut doc: Value = serde_json::from_str(&text).map_err(|reason| EditError::NotJson {
        path: file.into(),
        reason,
    })?;
    let Some(root) = doc.as_object_mut() else {
        return Err(EditError::Shape {
            path: file.into(),
            reason: "it does not hold a JSON object".into(),
        });
    };
    let (outcome, changed) = change(root).map_err(|reason| EditError::Shape {
        path: file.into(),
        reason,
    })?;
    if !changed {
        return Ok(outcome);
    }
    // Never write settings stud could not read back.
    if settings {
        Settings::from_value(&doc).map_err(|reason| EditError::WouldBeInvalid {
            path: file.into(),
            reason,
        })?;
    }
    let mut bytes =
        serde_json::to_vec_pretty(&doc).map_err(|reason| EditError::WouldBeInvalid {
            path: file.into(),
            reason,
        })?;
    bytes.push(b'\n');
    let write_error = |reason| EditError::Write {
        path: file.into(),
        reason,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    write_atomic(file, &bytes).map_err(write_error)?;
    Ok(outcome)
}

/// The object at `key` in `parent`, made when absent.
pub fn object_at<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    name: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    parent
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("`{name}` is not an object"))
}

/// The list at `key` in `parent`, made when absent.
pub fn list_at<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    name: &str,
) -> Result<&'a mut Vec<Value>, String> {
    parent
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| format!("`{name}` is not a list"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_other_keys_and_refuses_a_file_it_cannot_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"theme": "dark", "securityMode": {"mode": "allowlist"}}"#,
        )
        .ok();
        edit_settings(&file, |root| {
            let sm = object_at(root, "securityMode", "securityMode")?;
            list_at(sm, "allowlist", "securityMode.allowlist")?.push("bash:ls".into());
            Ok(((), true))
        })
        .unwrap_err();
        // `theme` is not a setting: the edit would keep an invalid file, so
        // nothing was written.
        let kept = std::fs::read_to_string(&file).unwrap();
        assert!(!kept.contains("bash:ls"), "{kept}");

        std::fs::write(
            &file,
            r#"{"securityMode": {"mode": "allowlist"}, "active": {"provider": "scripted"}}"#,
        )
        .ok();
        edit_settings(&file, |root| {
            let sm = object_at(root, "securityMode", "securityMode")?;
            list_at(sm, "allowlist", "securityMode.allowlist")?.push("bash:ls".into());
            Ok(((), true))
        })
        .unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(v["securityMode"]["allowlist"][0], "bash:ls");
        assert_eq!(v["active"]["provider"], "scripted");

        std::fs::write(&file, "{not json").ok();
        let e = edit_settings(&file, |_| Ok(((), true))).unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{not json");

        std::fs::write(&file, r#"{"securityMode": []}"#).ok();
        let e = edit_settings(&file, |root| {
            object_at(root, "securityMode", "securityMode")?;
            Ok(((), true))
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("`securityMode` is not an object"),
            "{e}"
        );
    }
}
