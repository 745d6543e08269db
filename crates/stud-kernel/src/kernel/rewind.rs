//! `/undo` and `/rewind` in a live session: the plan shown and asked
//! about, then carried out (files through the checkpoints, the
//! conversation cut back in the session and its store). Files changed
//! since the turn by someone else are named and kept unless the person
//! says to overwrite them.

use std::sync::Arc;

use super::checkpoints::{CheckpointError, Checkpoints, Kind, RestorePlan, describe};
use super::interaction::Answer;
use super::session::Session;
use crate::runtime::domain::{Choice, InteractionKind, InteractionStatus};
use stud_protocol::events::KernelEvent;

pub const UNDO: &str = "/undo";
pub const REWIND: &str = "/rewind";

/// What a rewind puts back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Both,
    Files,
    Conversation,
}

impl Scope {
    fn files(self) -> bool {
        self != Scope::Conversation
    }
    fn conversation(self) -> bool {
        self != Scope::Files
    }
}

/// How the person answered a restore's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consent {
    No,
    /// Yes, but keep the files changed since.
    KeepChanged,
    /// Yes, overwriting those too.
    Overwrite,
}

fn checkpoints(session: &Session) -> Result<Arc<Checkpoints>, String> {
    session.checkpoints.clone().ok_or_else(|| {
        "checkpoints are off (settings checkpoints.enabled); there is nothing to undo".to_string()
    })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CheckpointError> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// `/undo`: the last change taken back, after the person saw what it
/// restores and said yes.
pub async fn undo(session: &mut Session) -> Result<String, String> {
    let c = checkpoints(session)?;
    let plan = {
        let c = c.clone();
        blocking(move || c.plan_undo()).await?
    };
    if plan.is_empty() {
        return Ok(format!(
            "nothing to undo: the files {} changed are already as they were before it",
            plan.what
        ));
    }
    let consent = ask(session, &format!("Undo {}?", plan.what), &plan).await;
    carry_out(session, c, plan, consent, Scope::Files).await
}

/// `/rewind [TURN]`: pick a turn (newest first) and what to put back,
/// then the same question as `/undo`.
pub async fn rewind(session: &mut Session, arg: &str) -> Result<String, String> {
    let c = checkpoints(session)?;
    let records = {
        let c = c.clone();
        blocking(move || Ok(c.records())).await?
    };
    let turns: Vec<_> = records
        .iter()
        .rev()
        .filter(|r| r.kind == Kind::Turn)
        .collect();
    if turns.is_empty() {
        return Err("no turn of this session to rewind to yet".into());
    }
    let turn = match arg.trim() {
        "" => {
            let options: Vec<String> = turns
                .iter()
                .map(|r| {
                    let files = match r.changed.len() {
                        0 => "no files changed".to_string(),
                        n => format!("{n} file(s): {}", r.changed.join(", ")),
                    };
                    format!("{} - {files}", describe(r))
                })
                .collect();
            let picked = select(session, "Rewind to before which turn?", &options).await;
            match picked {
                Some(i) => turns[i].turn,
                None => return Ok("rewind cancelled; nothing changed".into()),
            }
        }
        n => n
            .parse()
            .map_err(|_| format!("/rewind takes a turn number, not `{n}`"))?,
    };
    let scopes = [
        ("Files and conversation", Scope::Both),
        ("Files only", Scope::Files),
        ("Conversation only", Scope::Conversation),
    ];
    let names: Vec<String> = scopes.iter().map(|(n, _)| n.to_string()).collect();
    let Some(i) = select(
        session,
        &format!("Rewind to before turn {turn}: what?"),
        &names,
    )
    .await
    else {
        return Ok("rewind cancelled; nothing changed".into());
    };
    let scope = scopes[i].1;
    let plan = {
        let c = c.clone();
        blocking(move || c.plan_rewind(turn)).await?
    };
    // A conversation that cannot go back is refused before the files'
    // question, so "Files and conversation" never does half of it.
    conversation_can_go_back(session, &plan, scope)?;
    let consent = if scope.files() && !plan.is_empty() {
        ask(session, &format!("Rewind {}?", plan.what), &plan).await
    } else {
        Consent::KeepChanged
    };
    carry_out(session, c, plan, consent, scope).await
}

/// What a rewind of the conversation says when the history no longer
/// lines up with the turn.
const MOVED: &str = "the conversation changed since that turn (compacted or cleared), so it cannot be rewound; nothing was changed (\"Files only\" rewinds its files)";

/// `Err` when `scope` takes the conversation back and the history no
/// longer lines up with where the plan's turn began.
fn conversation_can_go_back(
    session: &Session,
    plan: &RestorePlan,
    scope: Scope,
) -> Result<(), String> {
    match &plan.history {
        Some((len, first))
            if scope.conversation() && !session.conversation_lines_up(*len, first.as_deref()) =>
        {
            Err(MOVED.into())
        }
        _ => Ok(()),
    }
}

/// Carry out a plan the person agreed to. Nothing is changed when the
/// conversation part cannot be done; files changed since the turn (also
/// while the question was open) are kept and named unless the person
/// said to overwrite them.
pub async fn carry_out(
    session: &mut Session,
    c: Arc<Checkpoints>,
    plan: RestorePlan,
    consent: Consent,
    scope: Scope,
) -> Result<String, String> {
    if consent == Consent::No {
        return Ok("nothing restored".into());
    }
    conversation_can_go_back(session, &plan, scope)?;
    let mut said = Vec::new();
    let mut kept = Vec::new();
    let mut restored = Vec::new();
    if scope.files() && !plan.is_empty() {
        let overwrite = consent == Consent::Overwrite;
        let p = plan.clone();
        let done = blocking(move || c.carry_out(&p, overwrite)).await?;
        restored = done.record.map(|r| r.changed).unwrap_or_default();
        kept = done.kept;
        said.push(if restored.is_empty() {
            "no file was restored".to_string()
        } else {
            format!("restored {}", restored.join(", "))
        });
        if !kept.is_empty() {
            said.push(format!("kept {} (changed since)", kept.join(", ")));
        }
        if !plan.unkept.is_empty() {
            said.push(format!(
                "could not restore {} (too large to keep)",
                plan.unkept.join(", ")
            ));
        }
    }
    let mut history_len = None;
    if scope.conversation()
        && let Some((len, first)) = &plan.history
    {
        session.rewind_conversation(*len, first.as_deref()).await?;
        history_len = Some(*len as u64);
        said.push(format!("conversation rewound to {len} message(s)"));
    }
    session.bus.record(KernelEvent::CheckpointRestored {
        what: plan.what.clone(),
        restored,
        kept,
        history_len,
    });
    Ok(format!("{}: {}", plan.what, said.join("; ")))
}

/// The question for a plan: every file's line, the files changed since;
/// with those, whether to overwrite them.
async fn ask(session: &Session, title: &str, plan: &RestorePlan) -> Consent {
    let mut text = format!("{title} It restores:\n");
    for line in &plan.lines {
        text.push_str(&format!("  {line}\n"));
    }
    if plan.conflicts.is_empty() {
        let answer = session
            .interactions
            .request(InteractionKind::Confirm(text))
            .await;
        return match answer {
            Answer::Response(r) if r.status == InteractionStatus::Accepted => Consent::KeepChanged,
            _ => Consent::No,
        };
    }
    text.push_str(&format!(
        "Changed since (by you or another program): {}",
        plan.conflicts.join(", ")
    ));
    let options = [
        format!(
            "Restore, but keep {} as it is now",
            plan.conflicts.join(", ")
        ),
        "Restore everything, overwriting those changes".to_string(),
        "Cancel".to_string(),
    ];
    match select(session, &text, &options).await {
        Some(0) => Consent::KeepChanged,
        Some(1) => Consent::Overwrite,
        _ => Consent::No,
    }
}

/// One of `options`, by index; `None` when refused or cancelled.
async fn select(session: &Session, prompt: &str, options: &[String]) -> Option<usize> {
    let answer = session
        .interactions
        .request(InteractionKind::Select(Choice {
            prompt: prompt.to_string(),
            options: options.to_vec(),
        }))
        .await;
    match answer {
        Answer::Response(r) if r.status == InteractionStatus::Accepted => r
            .value
            .as_ref()
            .and_then(|v| options.iter().position(|o| o == v)),
        _ => None,
    }
}

/// `stud session rewind ID TURN`: a kept session rewound without running
/// it. Without `yes` it only says what it would do.
pub struct StoredRewind<'a> {
    pub store: &'a crate::runtime::Extension,
    pub home: &'a std::path::Path,
    pub id: &'a str,
    pub turn: u64,
    pub scope: Scope,
    pub yes: bool,
    /// Overwrite files changed since (else they are kept and named).
    pub overwrite: bool,
}

/// What a stored rewind did (or would do), one line each.
pub async fn rewind_stored(r: StoredRewind<'_>) -> Result<Vec<String>, String> {
    let _lock =
        super::session_lock::SessionLock::acquire(r.home, r.id).map_err(|e| e.to_string())?;
    let data = r
        .store
        .store_read(r.id)
        .await
        .map_err(|e| format!("session `{}`: {e}", r.id))?;
    let manifest: serde_json::Value = serde_json::from_str(&data.manifest)
        .map_err(|e| format!("session `{}`: its manifest is not JSON ({e})", r.id))?;
    let project = manifest["project_root"]
        .as_str()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("session `{}` names no project folder", r.id))?;
    // The person's `checkpoints.*`, as the session had them (whether to
    // write git commits, ignored files, the size limits).
    let settings =
        super::checkpoints::CheckpointSettings::of_person(r.home, std::path::Path::new(project))?;
    let c = Arc::new(Checkpoints::open(
        r.home,
        std::path::Path::new(project),
        r.id,
        &settings,
    ));
    let plan = {
        let (c, turn) = (c.clone(), r.turn);
        blocking(move || c.plan_rewind(turn)).await?
    };
    let mut out = vec![format!("session {} in {project}: {}", r.id, plan.what)];
    if r.scope.files() {
        if plan.is_empty() {
            out.push("files: nothing to restore".into());
        }
        for line in &plan.lines {
            out.push(format!("  {line}"));
        }
        if !plan.conflicts.is_empty() {
            out.push(format!(
                "changed since (kept unless --overwrite): {}",
                plan.conflicts.join(", ")
            ));
        }
    }
    let history = super::persist::history_of(&data.records);
    let cut = match (&plan.history, r.scope.conversation()) {
        (Some((len, first)), true) => {
            let lines_up = match first {
                Some(d) => history
                    .get(*len)
                    .is_some_and(|m| super::checkpoints::message_digest(m) == *d),
                None => *len <= history.len(),
            };
            if !lines_up {
                return Err("the conversation changed since that turn (compacted or cleared); nothing was changed; rewind only its files (--files)".into());
            }
            out.push(format!(
                "conversation: {} message(s) kept of {}",
                len,
                history.len()
            ));
            Some(*len)
        }
        _ => None,
    };
    if !r.yes {
        out.push("nothing was changed; run again with --yes to do it".into());
        return Ok(out);
    }
    if r.scope.files() && !plan.is_empty() {
        let (c, p, overwrite) = (c.clone(), plan.clone(), r.overwrite);
        let done = blocking(move || c.carry_out(&p, overwrite)).await?;
        let restored = done.record.map(|d| d.changed).unwrap_or_default();
        out.push(format!("restored {} file(s)", restored.len()));
        if !done.kept.is_empty() {
            out.push(format!("kept {} (changed since)", done.kept.join(", ")));
        }
    }
    if let Some(len) = cut {
        let record = stud_protocol::session_records::SessionRecord::Compaction {
            tier: 0,
            removed: format!("rewound to before turn {}", r.turn),
            history: history[..len]
                .iter()
                .map(super::payloads::message_json)
                .collect(),
        };
        r.store
            .store_append(r.id, &[record.to_line()])
            .await
            .map_err(|e| format!("session `{}`: {e}", r.id))?;
        out.push("conversation rewound".into());
    }
    Ok(out)
}
