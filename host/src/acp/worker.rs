//! The sessions an editor opened, on a thread of their own: a stud session
//! and its turns are not `Send`, so they run on a local task set, and the
//! connection talks to them through commands. Each session's events go to
//! the editor as `session/update` notifications, and its questions as
//! `session/request_permission` requests.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::editor_fs::AcpFiles;
use super::failure::Failure;
use super::replay::replay;
use super::updates::{Calls, text};
use crate::extensions::trust::recorded_scope;
use crate::kernel::interaction::Ask;
use crate::kernel::launch::LaunchError;
use crate::kernel::persist::{ResumeError, ResumeTarget};
use crate::kernel::{LaunchOptions, Launched, Mode, Subscriber, launch};
use crate::paths::StudHome;
use crate::runtime::domain::Image;
use crate::runtime::domain::{InteractionKind, InteractionResponse, InteractionStatus};

/// What the editor asked for when it opened a session.
pub struct Opening {
    pub cwd: PathBuf,
    /// MCP servers the editor passed.
    pub mcp: Vec<crate::mcp::McpServer>,
    /// The security mode, fixed for the session's life (`_meta.stud.mode`
    /// of `session/new`; settings decide when absent).
    pub mode: Option<Mode>,
    /// The editor serves `fs/read_text_file` and `fs/write_text_file`.
    pub fs: bool,
    /// Continue this kept session (`session/load`).
    pub resume: Option<String>,
}

/// A session now open.
pub struct Opened {
    pub id: String,
    pub mode: Mode,
    /// Its slash commands, as ACP `AvailableCommand`s.
    pub commands: Vec<Value>,
    /// Fired once the editor was told the session exists: only then may
    /// it be asked things about it (trusting its MCP servers).
    pub announced: oneshot::Sender<()>,
}

pub(super) type Turn = (
    String,
    Vec<Image>,
    oneshot::Sender<Result<schema::StopReason, Failure>>,
);

/// What the connection asks of the sessions.
pub enum Cmd {
    Open {
        opening: Opening,
        reply: oneshot::Sender<Result<Opened, Failure>>,
    },
    Prompt {
        session: String,
        text: String,
        /// Sent with the text (the session's model must have vision).
        images: Vec<Image>,
        reply: oneshot::Sender<Result<schema::StopReason, Failure>>,
    },
    SetMode {
        session: String,
        mode: String,
        reply: oneshot::Sender<Result<(), Failure>>,
    },
    Cancel {
        session: String,
    },
    /// The editor went away: end every session (its MCP servers and
    /// components stop, its record is kept), then answer.
    Shutdown {
        done: oneshot::Sender<()>,
    },
}

struct Open {
    turns: mpsc::UnboundedSender<Turn>,
    /// The session's turn loop; it ends (and shuts the session down) once
    /// `turns` is dropped.
    ended: tokio::task::JoinHandle<()>,
    cancel: Rc<RefCell<CancellationToken>>,
    mode: Mode,
}

/// Start the sessions' thread; commands go to the returned sender.
pub fn spawn(home: StudHome, conn: ConnectionTo<Client>) -> mpsc::UnboundedSender<Cmd> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Cmd>();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let mut open: HashMap<String, Open> = HashMap::new();
            let mut done = None;
            while let Some(cmd) = rx.recv().await {
                match cmd {
                    Cmd::Open { opening, reply } => {
                        let r = start(&home, opening, &conn).await.map(|(opened, o)| {
                            open.insert(opened.id.clone(), o);
                            opened
                        });
                        let _ = reply.send(r);
                    }
                    Cmd::Prompt {
                        session,
                        text,
                        images,
                        reply,
                    } => match open.get(&session) {
                        Some(o) => {
                            let _ = o.turns.send((text, images, reply));
                        }
                        None => {
                            let _ = reply.send(Err(Failure::NoSession(session)));
                        }
                    },
                    Cmd::SetMode {
                        session,
                        mode,
                        reply,
                    } => {
                        let r = match open.get(&session) {
                            None => Err(Failure::NoSession(session)),
                            Some(o) if o.mode.as_str() == mode => Ok(()),
                            Some(o) => Err(Failure::invalid(
                                "modeId",
                                "mode-fixed",
                                format!(
                                    "this session runs in `{}` mode, chosen when it was opened; open a new session (with `_meta.stud.mode` = `{mode}`) for another",
                                    o.mode.as_str()
                                ),
                            )),
                        };
                        let _ = reply.send(r);
                    }
                    Cmd::Cancel { session } => {
                        if let Some(o) = open.get(&session) {
                            o.cancel.borrow().cancel();
                        }
                    }
                    Cmd::Shutdown { done: d } => {
                        done = Some(d);
                        break;
                    }
                }
            }
            for (_, o) in open.drain() {
                o.cancel.borrow().cancel();
                drop(o.turns);
                let _ = o.ended.await;
            }
            if let Some(d) = done {
                let _ = d.send(());
            }
        });
    });
    tx
}

/// Open a session: a new one, or a kept one (its history is sent as
/// updates before this returns).
async fn start(
    home: &StudHome,
    opening: Opening,
    conn: &ConnectionTo<Client>,
) -> Result<(Opened, Open), Failure> {
    let Opening {
        cwd,
        mcp,
        mode,
        fs,
        resume,
    } = opening;
    if !cwd.is_absolute() {
        return Err(Failure::invalid(
            "cwd",
            "cwd-not-absolute",
            format!(
                "`{}` is not an absolute path; send the project folder's absolute path",
                cwd.display()
            ),
        ));
    }
    if !cwd.is_dir() {
        return Err(Failure::invalid(
            "cwd",
            "cwd-not-a-folder",
            format!("`{}` is not a folder", cwd.display()),
        ));
    }
    if let Some(id) = &resume
        && !is_session_id(id)
    {
        return Err(Failure::invalid(
            "sessionId",
            "not-a-session-id",
            format!("`{id}` is not a session id (letters, digits, - and _)"),
        ));
    }
    let (ask_tx, ask_rx) = mpsc::unbounded_channel::<Ask>();
    let files = fs.then(|| Arc::new(AcpFiles::new(conn.clone())));
    let opts = LaunchOptions {
        headless: false,
        project: recorded_scope(home.root(), &cwd),
        questions: Some(ask_tx),
        resume: resume.clone().map(ResumeTarget::Id),
        mode,
        editor_mcp: mcp,
        settle_mcp: true,
        replay: None,
        editor_files: files
            .clone()
            .map(|f| f as Arc<dyn crate::kernel::editor_files::EditorFiles>),
        ..LaunchOptions::headless(home.clone(), cwd.clone())
    };
    let calls = Arc::new(std::sync::Mutex::new(Calls::new(cwd.clone())));
    let launched = launch(opts).await.map_err(|e| {
        let message = e.to_string();
        match (resume, &e) {
            (_, LaunchError::Resume(ResumeError::OtherProject { .. })) => {
                Failure::invalid("cwd", "session-of-another-project", message)
            }
            (Some(id), _) if message.contains("no session") => Failure::NoSession(id),
            _ => Failure::failed("launch-failed", message),
        }
    })?;
    for w in &launched.warnings {
        eprintln!("warning: {w}");
    }
    let id = launched.session.id.clone();
    if let Some(f) = &files {
        let _ = f.session.set(id.clone());
    }
    let (records, project) = match launched.session.checkpoints() {
        Some(c) => (c.records(), c.project().to_path_buf()),
        None => (Vec::new(), std::path::PathBuf::new()),
    };
    for update in replay(launched.session.history(), &records, &project) {
        send_update(conn, &id, update);
    }
    // Attached while the session started, before anyone listened; shown
    // once the editor knows the session.
    let first: Vec<Value> = launched
        .session
        .workflow_stages()
        .map(|(entry, stages)| {
            calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .start_plan(&entry, &stages)
        })
        .into_iter()
        .collect();
    let sub = launched.bus.subscribe("acp", 1 << 16);
    tokio::spawn(forward_events(
        sub.clone(),
        id.clone(),
        conn.clone(),
        calls.clone(),
    ));
    tokio::spawn(answer_questions(ask_rx, id.clone(), conn.clone(), calls));
    let mode = launched.session.mode();
    let commands = available_commands(&launched);
    let (turns, turns_rx) = mpsc::unbounded_channel();
    let cancel = Rc::new(RefCell::new(CancellationToken::new()));
    let (announced, known) = oneshot::channel();
    let ended = tokio::task::spawn_local(super::turns::run_turns(
        launched,
        turns_rx,
        cancel.clone(),
        sub,
        super::turns::Known {
            conn: conn.clone(),
            home: home.clone(),
            known,
            first,
        },
    ));
    Ok((
        Opened {
            id,
            mode,
            commands,
            announced,
        },
        Open {
            turns,
            ended,
            cancel,
            mode,
        },
    ))
}

/// The session's slash commands as ACP `AvailableCommand`s (names without
/// the slash, as editors show them after one).
fn available_commands(launched: &Launched) -> Vec<Value> {
    launched
        .commands
        .catalogue()
        .entries()
        .iter()
        .map(|e| {
            let mut c = json!({
                "name": e.name.to_string().trim_start_matches('/'),
                "description": e.description,
            });
            if let Some(hint) = &e.argument_hint {
                c["input"] = json!({"hint": hint});
            }
            c
        })
        .collect()
}

/// What session stores accept as an id: an id from the editor never
/// names a path.
fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The most text one merged `agent_message_chunk` carries.
const MERGED_CHUNK_BYTES: usize = 16 * 1024;

type SharedCalls = Arc<std::sync::Mutex<Calls>>;

async fn forward_events(
    sub: Arc<Subscriber>,
    id: String,
    conn: ConnectionTo<Client>,
    calls: SharedCalls,
) {
    while let Some(mut ev) = sub.next().await {
        // A burst of deltas queued behind this one goes out as one chunk.
        sub.merge_queued_tokens(&mut ev, MERGED_CHUNK_BYTES);
        let update = calls.lock().unwrap_or_else(|p| p.into_inner()).update(&ev);
        if let Some(update) = update {
            send_update(&conn, &id, update);
        }
        sub.ack();
    }
}

pub(super) fn send_update(conn: &ConnectionTo<Client>, id: &str, update: Value) {
    let note = json!({"sessionId": id, "update": update});
    match serde_json::from_value::<schema::SessionNotification>(note) {
        Ok(n) => {
            let _ = conn.send_notification(n);
        }
        Err(e) => eprintln!("acp: an update did not fit the schema: {e}"),
    }
}

/// Approvals and confirmations (trusting an MCP server) become
/// `session/request_permission`; other questions (a choice, free text)
/// are declined: ACP has no dialog for them.
async fn answer_questions(
    mut asks: mpsc::UnboundedReceiver<Ask>,
    id: String,
    conn: ConnectionTo<Client>,
    calls: SharedCalls,
) {
    while let Some(ask) = asks.recv().await {
        let correlation_id = ask.request.correlation_id.clone();
        let (status, value) = match &ask.request.kind {
            InteractionKind::Approve(a) => {
                let call = about(&calls, &correlation_id).await;
                permission(&conn, &id, &correlation_id, a, call).await
            }
            InteractionKind::Confirm(question) => {
                confirm(&conn, &id, &correlation_id, question).await
            }
            _ => (InteractionStatus::Rejected, None),
        };
        let _ = ask.reply.send(Ok(InteractionResponse {
            correlation_id,
            status,
            value,
        }));
    }
}

/// The call question `id` is about: the event that says so is on its way
/// to the forwarder (it was published before the question was routed).
async fn about(calls: &SharedCalls, id: &str) -> Option<(String, String, Value)> {
    for _ in 0..200 {
        if let Some(found) = calls.lock().unwrap_or_else(|p| p.into_inner()).asked(id) {
            return Some(found);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

async fn permission(
    conn: &ConnectionTo<Client>,
    id: &str,
    correlation_id: &str,
    a: &crate::runtime::domain::Approval,
    call: Option<(String, String, Value)>,
) -> (InteractionStatus, Option<String>) {
    let (call_id, raw_input) = match call {
        Some((call, _, args)) => (call, args),
        None => (
            correlation_id.to_string(),
            json!({"description": a.description}),
        ),
    };
    let request = json!({
        "sessionId": id,
        "toolCall": {
            "toolCallId": call_id,
            "title": format!("{}: {}", a.tool, a.approval_key.replace('\n', "; ")),
            "kind": super::updates::tool_kind(&a.tool),
            "rawInput": raw_input,
        },
        "options": [
            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
    });
    match chosen(conn, request).await.as_deref() {
        Some("allow-once") => (InteractionStatus::Accepted, Some("once".into())),
        Some("allow-always") => (InteractionStatus::Accepted, None),
        _ => (InteractionStatus::Rejected, None),
    }
}

/// A yes/no question as a permission request with no tool call behind it.
pub(super) async fn confirm(
    conn: &ConnectionTo<Client>,
    id: &str,
    correlation_id: &str,
    question: &str,
) -> (InteractionStatus, Option<String>) {
    let request = json!({
        "sessionId": id,
        "toolCall": {
            "toolCallId": correlation_id,
            "title": question.lines().next().unwrap_or(question),
            "kind": "other",
            "content": [{"type": "content", "content": text(question)}],
        },
        "options": [
            {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
            {"optionId": "no", "name": "No", "kind": "reject_once"},
        ]
    });
    match chosen(conn, request).await.as_deref() {
        Some("yes") => (InteractionStatus::Accepted, None),
        _ => (InteractionStatus::Rejected, None),
    }
}

/// Send a `session/request_permission`; the option the editor chose
/// (`None`: it cancelled, failed, or the request did not fit the schema).
async fn chosen(conn: &ConnectionTo<Client>, request: Value) -> Option<String> {
    let request = serde_json::from_value::<schema::RequestPermissionRequest>(request).ok()?;
    let answer = conn.send_request(request).block_task().await.ok()?;
    let answer = serde_json::to_value(answer).ok()?;
    answer["outcome"]["optionId"].as_str().map(str::to_string)
}
