//! Sessions on disk through the active session-store extension: every
//! appended message is a log record, confirmed by the store before the
//! kernel reports it persisted; the manifest snapshot (ids, times, mode,
//! provider and model, the extension set with versions and digests, state
//! slots, usage) is rewritten at start and after each turn, keys sorted.
//! Resume reads both back, repairs a tool call left without its result,
//! and reports drift in the extension set.

use std::sync::Arc;

use serde_json::Value;

use super::authority::Mode;
use super::payloads::{message_from, message_json};
use crate::manifest::Kind;
use crate::runtime::domain::{ContentPart, Message, ResultPart, Role, ToolResult, Usage};
use crate::runtime::{CallError, Extension};
use stud_protocol::session_manifest::SessionManifest;
use stud_protocol::session_records::SessionRecord;

/// The store that keeps sessions unless the settings name another.
pub const DEFAULT_STORE: &str = "filesystem";

/// What `--continue` / `--resume` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeTarget {
    /// The most recently updated session of this project.
    Latest,
    Id(String),
}

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(
        "no session store is loaded; enable the `filesystem` store (or another) to keep and resume sessions"
    )]
    NoStore,
    #[error("the session store `{store}` failed: {source}")]
    Store { store: String, source: CallError },
    #[error("there is no earlier session for {project} (see `stud session list`)")]
    NoneHere { project: String },
    #[error(
        "session `{id}` was written by the session store `{wrote}`, but the active store is `{active}`; resume it with `{wrote}` active (settings `active.sessionStore`)"
    )]
    StoreMismatch {
        id: String,
        wrote: String,
        active: String,
    },
    /// `-c` on a store several machines share takes only this person's
    /// own newest session; another's is resumed by its id, knowingly.
    #[error(
        "the newest session of this folder, {id}, was started by {by} on another machine or account; `-c` takes only your own: resume it with `stud run --resume {id}` if you mean to"
    )]
    NotYours { id: String, by: String },
    #[error(
        "session `{id}` was written by another stud process while this one started; start again to resume it as it is now"
    )]
    ChangedMeanwhile { id: String },
    #[error("session `{id}` cannot be resumed: its manifest is missing or unreadable ({detail})")]
    BadManifest { id: String, detail: String },
    /// A session is resumed only in the project root it was kept for: in
    /// another it would run its conversation against other files, and
    /// its record would move there (listings show it under the new root).
    #[error(
        "session `{id}` belongs to the project folder {}, not {here}; a session is resumed only in its own folder: open it there, or start a new session here",
        recorded.as_deref().unwrap_or("(none recorded)")
    )]
    OtherProject {
        id: String,
        /// The root its manifest names (`None`: it names none).
        recorded: Option<String>,
        here: String,
    },
}

/// A session read back from its store.
pub struct Resumed {
    pub session_id: String,
    /// Read from a store other people may write (any but the bundled
    /// `filesystem` one on this machine's disk): its mode can only make
    /// this run stricter, and its recorded extension set and extension
    /// state are not taken up.
    pub shared: bool,
    /// How many records were read, to see at the claim whether another
    /// process wrote the session in between.
    pub records: usize,
    pub created_ms: u64,
    pub mode: Option<Mode>,
    pub history: Vec<Message>,
    pub usage: Usage,
    pub turns: u64,
    pub cost_usd: f64,
    /// Tool results added for calls that never finished.
    pub repaired: Vec<Message>,
    pub drift: Vec<String>,
    pub title: String,
    /// The state machine the session ran, if any.
    pub state_machine: Option<super::workflow_def::Recorded>,
    /// Its newest position (the workflow slot).
    pub position: Option<super::workflow_def::Position>,
    /// The extension set it was started with, if one was chosen.
    pub extension_set: Option<super::extension_set::ExtensionSet>,
    /// What its extensions cost in the processes before this one.
    pub metering: Vec<stud_protocol::session_manifest::MeteredExtension>,
}

/// The conversation a session's records leave: its messages, from the
/// last compaction (or rewind) on.
pub fn history_of(records: &[String]) -> Vec<Message> {
    let mut history = Vec::new();
    for r in records {
        match SessionRecord::parse(r) {
            Some(SessionRecord::Message { message }) => {
                if let Some(m) = message_from(&message) {
                    history.push(m);
                }
            }
            // The history as compaction left it: later records follow it,
            // and a resumed session does not compact the same turns again.
            Some(SessionRecord::Compaction {
                history: compacted, ..
            }) => {
                history = compacted.iter().filter_map(message_from).collect();
            }
            Some(SessionRecord::Workflow { .. } | SessionRecord::Trace { .. }) | None => {}
        }
    }
    history
}

pub fn now_ms() -> u64 {
    super::events::now_ms()
}

/// One log record for a message.
pub fn message_record(message: &Message) -> String {
    SessionRecord::Message {
        message: message_json(message),
    }
    .to_line()
}

fn usage_from(v: &Value) -> Usage {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_tokens: n("cache_read_tokens"),
        cache_write_tokens: n("cache_write_tokens"),
    }
}

/// The newest session `store` keeps for `project_root`.
async fn latest(store: &Extension, project_root: &str) -> Result<Option<String>, CallError> {
    Ok(store
        .store_list()
        .await?
        .into_iter()
        .filter(|s| {
            s.project_root == project_root && !super::agent_catalog::is_child_id(&s.session_id)
        })
        .max_by_key(|s| s.updated_ms)
        .map(|s| s.session_id))
}

fn is_not_found(e: &CallError) -> bool {
    matches!(e, CallError::Guest { error, .. } if error.code == "not-found")
}

/// Read a session for resuming. `loaded` is this run's extension set
/// (drift is reported against it; state slots of unchanged extensions
/// are restored).
pub async fn read(
    store: &Arc<Extension>,
    target: &ResumeTarget,
    project_root: &str,
    loaded: &[Arc<Extension>],
) -> Result<Resumed, ResumeError> {
    let store_id = store.id().to_string();
    let shared = !(store.scope == crate::scope::Scope::Bundled && store_id == DEFAULT_STORE);
    let failed = |source| ResumeError::Store {
        store: store_id.clone(),
        source,
    };
    // `Err(Some(e))`: the store said so; `Err(None)`: nothing for this
    // project.
    let found = match target {
        ResumeTarget::Id(id) => match store.store_read(id).await {
            Ok(data) => Ok((id.clone(), data)),
            Err(e) if is_not_found(&e) => Err(Some(e)),
            Err(e) => return Err(failed(e)),
        },
        ResumeTarget::Latest => match latest(store, project_root).await.map_err(failed)? {
            Some(id) => Ok((id.clone(), store.store_read(&id).await.map_err(failed)?)),
            None => Err(None),
        },
    };
    let (id, data) = match found {
        Ok(found) => found,
        Err(missing) => {
            // Kept by another store (the user switched `active.sessionStore`):
            // say which, rather than that there is nothing.
            for other in loaded
                .iter()
                .filter(|e| e.kind() == Kind::SessionStore && e.id() != store.id())
            {
                let id = match target {
                    ResumeTarget::Id(id) => other.store_read(id).await.ok().map(|_| id.clone()),
                    ResumeTarget::Latest => latest(other, project_root).await.ok().flatten(),
                };
                if let Some(id) = id {
                    return Err(ResumeError::StoreMismatch {
                        id,
                        wrote: other.id().to_string(),
                        active: store_id,
                    });
                }
            }
            return Err(match missing {
                Some(e) => failed(e),
                None => ResumeError::NoneHere {
                    project: project_root.to_string(),
                },
            });
        }
    };
    let manifest = read_manifest(&data.manifest).map_err(|detail| ResumeError::BadManifest {
        id: id.clone(),
        detail,
    })?;
    let wrote = manifest.store.clone();
    if wrote != store_id {
        return Err(ResumeError::StoreMismatch {
            id,
            wrote,
            active: store_id,
        });
    }
    // Checked before anything is restored or written: a refused session
    // is left exactly as it was.
    if manifest.project_root != project_root {
        return Err(ResumeError::OtherProject {
            id,
            recorded: Some(manifest.project_root).filter(|r| !r.is_empty()),
            here: project_root.to_string(),
        });
    }
    if shared && matches!(target, ResumeTarget::Latest) {
        let (machine, user) = (super::origin::machine(), super::origin::user());
        if manifest.machine != machine || manifest.user != user {
            return Err(ResumeError::NotYours {
                id,
                by: format!("{}@{}", manifest.user, manifest.machine),
            });
        }
    }
    let mut history = history_of(&data.records);
    let repaired = repair(&mut history);
    let mut drift = Vec::new();
    for e in &manifest.extensions {
        let eid = e.id.as_str();
        let version = Some(e.version.as_str())
            .filter(|v| !v.is_empty())
            .unwrap_or("?");
        match loaded.iter().find(|x| x.id().as_str() == eid) {
            None => drift.push(format!(
                "extension `{eid}` {version} is no longer available; the session goes on without it"
            )),
            Some(x) if x.digest.to_string() != e.sha256 => drift.push(format!(
                "extension `{eid}` changed since the session was saved ({version} -> {}, {})",
                x.manifest.version, x.digest
            )),
            // Extension state is taken up only from the person's own disk.
            Some(_) if shared => {}
            Some(x) => {
                if let Some(state) = manifest.state.get(eid).filter(|s| !s.is_null()) {
                    let _ = x.restore_state(state.to_string());
                }
            }
        }
    }
    Ok(Resumed {
        shared,
        records: data.records.len(),
        session_id: id,
        created_ms: Some(manifest.created_ms)
            .filter(|ms| *ms > 0)
            .unwrap_or_else(now_ms),
        mode: manifest.security_mode.parse().ok(),
        history,
        usage: usage_from(&manifest.usage),
        turns: manifest.turns,
        cost_usd: manifest.cost_usd,
        repaired,
        drift,
        title: manifest.title,
        state_machine: manifest
            .state_machine
            .map(super::workflow_def::Recorded::from),
        position: super::workflow_def::Position::latest(&data.records),
        extension_set: manifest
            .extension_set
            .filter(|_| !shared)
            .and_then(|set| serde_json::from_value(set).ok()),
        metering: manifest.metering,
    })
}

/// A stored manifest; the error names the field that was wrong.
fn read_manifest(text: &str) -> Result<SessionManifest, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| match e.path().to_string() {
        path if path == "." => e.inner().to_string(),
        path => format!("field `{path}`: {}", e.inner()),
    })
}

/// Give every tool call a result: a call whose result never arrived (the
/// process died mid-call) gets an explicit "interrupted" error result.
/// Returns the messages it added at the end of the history (to persist).
pub fn repair(history: &mut Vec<Message>) -> Vec<Message> {
    let answered: std::collections::HashSet<String> = history
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut added_at_end = Vec::new();
    let len = history.len();
    for (i, m) in std::mem::take(history).into_iter().enumerate() {
        let missing: Vec<ContentPart> = m
            .content
            .iter()
            .filter_map(|p| match p {
                ContentPart::ToolCall(c) if !answered.contains(&c.id) => {
                    Some(ContentPart::ToolResult(ToolResult {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        content: vec![ResultPart::Text(
                            "interrupted: the session ended before this tool call finished; it may or may not have run"
                                .into(),
                        )],
                        is_error: true,
                    }))
                }
                _ => None,
            })
            .collect();
        out.push(m);
        if !missing.is_empty() {
            let fix = Message {
                role: Role::Tool,
                content: missing,
            };
            if i + 1 == len {
                added_at_end.push(fix.clone());
            }
            out.push(fix);
        }
    }
    *history = out;
    added_at_end
}

/// The session's link to its store.
pub struct Persistence {
    pub store: Arc<Extension>,
    pub created_ms: u64,
    pub project_root: String,
    /// Every loaded extension, for the manifest's extension set and state.
    pub loaded: Vec<Arc<Extension>>,
    pub title: String,
    /// The store confirmed a write to this session's log (from this run);
    /// shared with the write in flight that sets it.
    pub wrote: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Manifest writes in flight (shared with child sessions).
    pub manifests: super::manifest_writer::ManifestWriter,
    /// The last manifest queued, without its `updated_ms`: one that has
    /// not changed is not written again.
    pub last_manifest: std::sync::Mutex<Option<String>>,
}
