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

use super::replay::replay;
use super::updates::Calls;
use crate::extensions::trust::recorded_scope;
use crate::kernel::interaction::Ask;
use crate::kernel::persist::ResumeTarget;
use crate::kernel::{LaunchOptions, Launched, Subscriber, TurnStatus, launch};
use crate::paths::StudHome;
use crate::runtime::bindings::stud::extension::interaction::{
    InteractionKind, InteractionResponse, InteractionStatus,
};

/// What the connection asks of the sessions.
pub enum Cmd {
    New {
        cwd: PathBuf,
        reply: oneshot::Sender<Result<String, String>>,
    },
    Prompt {
        session: String,
        text: String,
        reply: oneshot::Sender<Result<schema::StopReason, String>>,
    },
    Cancel {
        session: String,
    },
    /// Continue a kept session, its history sent as updates first.
    Load {
        session: String,
        cwd: PathBuf,
        reply: oneshot::Sender<Result<(), String>>,
    },
}

struct Open {
    turns: mpsc::UnboundedSender<(String, oneshot::Sender<Result<schema::StopReason, String>>)>,
    cancel: Rc<RefCell<CancellationToken>>,
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
            while let Some(cmd) = rx.recv().await {
                match cmd {
                    Cmd::New { cwd, reply } => {
                        let r = start(&home, cwd, None, &conn).await.map(|(id, o)| {
                            open.insert(id.clone(), o);
                            id
                        });
                        let _ = reply.send(r);
                    }
                    Cmd::Load {
                        session,
                        cwd,
                        reply,
                    } => {
                        let r = start(&home, cwd, Some(session), &conn)
                            .await
                            .map(|(id, o)| {
                                open.insert(id, o);
                            });
                        let _ = reply.send(r);
                    }
                    Cmd::Prompt {
                        session,
                        text,
                        reply,
                    } => match open.get(&session) {
                        Some(o) => {
                            let _ = o.turns.send((text, reply));
                        }
                        None => {
                            let _ = reply.send(Err(format!("no session `{session}`")));
                        }
                    },
                    Cmd::Cancel { session } => {
                        if let Some(o) = open.get(&session) {
                            o.cancel.borrow().cancel();
                        }
                    }
                }
            }
        });
    });
    tx
}

/// Open a session in `cwd`: a new one, or `resume` (its history is sent
/// as updates before this returns).
async fn start(
    home: &StudHome,
    cwd: PathBuf,
    resume: Option<String>,
    conn: &ConnectionTo<Client>,
) -> Result<(String, Open), String> {
    if !cwd.is_absolute() {
        return Err(format!("cwd `{}` is not an absolute path", cwd.display()));
    }
    let (ask_tx, ask_rx) = mpsc::unbounded_channel::<Ask>();
    let opts = LaunchOptions {
        headless: false,
        project: recorded_scope(home.root(), &cwd),
        questions: Some(ask_tx),
        resume: resume.map(ResumeTarget::Id),
        ..LaunchOptions::headless(home.clone(), cwd.clone())
    };
    let calls = Arc::new(std::sync::Mutex::new(Calls::new(cwd.clone())));
    let launched = launch(opts).await.map_err(|e| e.to_string())?;
    for w in &launched.warnings {
        eprintln!("warning: {w}");
    }
    let id = launched.session.id.clone();
    for update in replay(launched.session.history()) {
        send_update(conn, &id, update);
    }
    let sub = launched.bus.subscribe("acp", 1 << 16);
    tokio::spawn(forward_events(
        sub.clone(),
        id.clone(),
        conn.clone(),
        calls.clone(),
    ));
    tokio::spawn(answer_questions(ask_rx, id.clone(), conn.clone(), calls));
    let (turns, turns_rx) = mpsc::unbounded_channel();
    let cancel = Rc::new(RefCell::new(CancellationToken::new()));
    tokio::task::spawn_local(run_turns(launched, turns_rx, cancel.clone(), sub));
    Ok((id, Open { turns, cancel }))
}

async fn run_turns(
    mut launched: Launched,
    mut turns: mpsc::UnboundedReceiver<(
        String,
        oneshot::Sender<Result<schema::StopReason, String>>,
    )>,
    cancel: Rc<RefCell<CancellationToken>>,
    sub: Arc<Subscriber>,
) {
    while let Some((text, reply)) = turns.recv().await {
        let token = CancellationToken::new();
        *cancel.borrow_mut() = token.clone();
        let outcome = launched.session.run_turn(&text, &token).await;
        // Every update of the turn reaches the editor before its answer.
        for _ in 0..500 {
            if sub.is_idle() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let stop = match outcome.status {
            TurnStatus::Completed => Ok(schema::StopReason::EndTurn),
            TurnStatus::Cancelled => Ok(schema::StopReason::Cancelled),
            TurnStatus::Failed { code, .. } if code == "loop-bound-exceeded" => {
                Ok(schema::StopReason::MaxTurnRequests)
            }
            TurnStatus::Failed { code, message } => Err(format!("{code}: {message}")),
            TurnStatus::Halted { tool, key } => Err(format!(
                "approval needed for {tool} `{key}` and nobody could answer"
            )),
        };
        let _ = reply.send(stop);
    }
    launched.shutdown().await;
}

type SharedCalls = Arc<std::sync::Mutex<Calls>>;

async fn forward_events(
    sub: Arc<Subscriber>,
    id: String,
    conn: ConnectionTo<Client>,
    calls: SharedCalls,
) {
    while let Some(ev) = sub.next().await {
        let update = calls.lock().unwrap_or_else(|p| p.into_inner()).update(&ev);
        if let Some(update) = update {
            send_update(&conn, &id, update);
        }
        sub.ack();
    }
}

fn send_update(conn: &ConnectionTo<Client>, id: &str, update: Value) {
    let note = json!({"sessionId": id, "update": update});
    match serde_json::from_value::<schema::SessionNotification>(note) {
        Ok(n) => {
            let _ = conn.send_notification(n);
        }
        Err(e) => eprintln!("acp: an update did not fit the schema: {e}"),
    }
}

/// Approvals become `session/request_permission`; other questions (a
/// confirmation, free text) are declined: an editor has no dialog for them.
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
    a: &crate::runtime::bindings::stud::extension::interaction::Approval,
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
    let Ok(request) = serde_json::from_value::<schema::RequestPermissionRequest>(request) else {
        return (InteractionStatus::Rejected, None);
    };
    let answer = match conn.send_request(request).block_task().await {
        Ok(r) => serde_json::to_value(r).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    match answer["outcome"]["optionId"].as_str() {
        Some("allow-once") => (InteractionStatus::Accepted, Some("once".into())),
        Some("allow-always") => (InteractionStatus::Accepted, None),
        _ => (InteractionStatus::Rejected, None),
    }
}
