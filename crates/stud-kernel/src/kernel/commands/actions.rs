//! The kernel's answers to a command's `session` requests: reads are built
//! from the live session, actions are applied to it one at a time. Every
//! action is published (`command.action`) with what came of it.

use stud_protocol::events::KernelEvent;

use super::turn_view::Access;
use super::{After, Commands, TurnView, network, views};
use crate::extensions::Scope;
use crate::kernel::session::Session;
use crate::runtime::services::{
    ErrorClass, ExtError, SessionAction, SessionRequest, SessionView, ext_error,
};

impl Commands {
    pub(super) async fn answer(
        &mut self,
        ext: &str,
        scope: Scope,
        request: SessionRequest,
        access: &mut Access<'_>,
        after: &mut After,
    ) -> Result<String, ExtError> {
        match request {
            SessionRequest::Read(view) => self.read(view, access).await,
            SessionRequest::Act(action) => {
                let name = action_name(&action);
                let result = if scope == Scope::Project && loosens(&action) {
                    Err(ext_error(
                        ErrorClass::Validation,
                        "project-command",
                        format!(
                            "`{ext}` comes from this project's .stud/, and a project may not {name}: a state machine's stages approve tools without asking, so only you attach one (/sm ID)"
                        ),
                    ))
                } else {
                    match access {
                        Access::Live(session) => self.act(action, session, after).await,
                        Access::Turn(view) => self.act_during_turn(action, view, after),
                    }
                };
                let (ok, message) = match &result {
                    Ok(m) => (true, m.clone()),
                    Err(e) => (false, e.message.clone()),
                };
                self.bus.record(KernelEvent::CommandAction {
                    extension: ext.to_string(),
                    action: name.into(),
                    ok,
                    message,
                });
                result
            }
        }
    }

    async fn read(&self, view: SessionView, access: &Access<'_>) -> Result<String, ExtError> {
        let json = match (view, access) {
            (SessionView::Overview, Access::Live(session)) => {
                to_json(&views::overview(self, session))?
            }
            (SessionView::Overview, Access::Turn(turn)) => to_json(&turn.overview)?,
            (SessionView::Sessions, Access::Live(session)) => {
                to_json(&views::sessions(session).await?)?
            }
            (SessionView::Sessions, Access::Turn(turn)) => {
                to_json(&views::sessions_of(turn.sessions.as_ref()).await?)?
            }
            (SessionView::NetworkPolicy, _) => to_json(&views::network_policy(&self.env)?)?,
            (SessionView::Trust, _) => to_json(&views::trust(&self.env))?,
        };
        Ok(json)
    }

    async fn act(
        &mut self,
        action: SessionAction,
        session: &mut Session,
        after: &mut After,
    ) -> Result<String, ExtError> {
        let refused =
            |code: &str, message: String| ext_error(ErrorClass::Validation, code, message);
        match action {
            SessionAction::SwitchModel(model) => match session.set_model(&model) {
                Ok(()) => Ok(format!(
                    "model: {} (provider {}); the next turn uses it",
                    session.model(),
                    session.provider_id()
                )),
                Err(e) => Err(refused(
                    "switch-refused",
                    format!("{e}; still using {}", session.model()),
                )),
            },
            SessionAction::SwitchProvider(id) => {
                let Some(ext) = self
                    .env
                    .loaded
                    .iter()
                    .find(|e| e.id().as_str() == id && e.kind() == crate::manifest::Kind::Provider)
                    .cloned()
                else {
                    let loaded: Vec<String> = self
                        .env
                        .loaded
                        .iter()
                        .filter(|e| e.kind() == crate::manifest::Kind::Provider)
                        .map(|e| e.id().to_string())
                        .collect();
                    return Err(refused(
                        "unknown-provider",
                        format!(
                            "provider `{id}` is not loaded (loaded: {}); still using {}",
                            loaded.join(", "),
                            session.provider_id()
                        ),
                    ));
                };
                session
                    .set_provider(ext)
                    .await
                    .map(|()| {
                        format!(
                            "provider: {} with model {}; the next turn uses it",
                            session.provider_id(),
                            session.model()
                        )
                    })
                    .map_err(|e| {
                        refused(
                            "switch-refused",
                            format!("{e}; still using {}", session.provider_id()),
                        )
                    })
            }
            SessionAction::Compact => Ok(session.compact_now().await),
            SessionAction::Clear => {
                *after = After::NewSession;
                Ok(format!(
                    "a new, empty session starts now; this one stays saved as {} (resume it with /resume {})",
                    session.id, session.id
                ))
            }
            SessionAction::SaveAndClose => {
                session.save_manifest().await;
                *after = After::Exit;
                Ok(format!(
                    "saved; continue later with `stud --resume {}` (or `stud -c` in this folder)",
                    session.id
                ))
            }
            SessionAction::Exit => {
                *after = After::Exit;
                Ok("bye".into())
            }
            SessionAction::Reload => {
                let mut said = self.reload(session.reloader.as_deref());
                let (tools, mcp) = session.mcp.reconnect_down().await;
                for w in session.add_mcp_tools(tools) {
                    said.push_str(&format!("; {w}"));
                }
                if !mcp.is_empty() {
                    said.push_str(&format!("; {mcp}"));
                }
                Ok(said)
            }
            SessionAction::AttachStateMachine(id) => session
                .attach_state_machine(&id)
                .await
                .map(|()| format!("workflow: {id} attached; the next input runs its stages"))
                .map_err(|e| refused("attach-refused", e.to_string())),
            SessionAction::Resume(id) => {
                if id == session.id {
                    return Err(refused(
                        "already-current",
                        format!("{id} is the session you are in"),
                    ));
                }
                let list = views::sessions(session).await?;
                if !list.sessions.iter().any(|s| s.id == id) {
                    return Err(refused(
                        "unknown-session",
                        format!("no saved session `{id}` in this project; /sessions lists them"),
                    ));
                }
                *after = After::Resume(id.clone());
                Ok(format!(
                    "continuing session {id}; this one stays saved as {}",
                    session.id
                ))
            }
            SessionAction::NetworkAllow(change) => {
                network::change(
                    &self.env,
                    &self.interactions,
                    &change,
                    network::Change::Allow,
                )
                .await
            }
            SessionAction::NetworkDeny(change) => {
                network::change(
                    &self.env,
                    &self.interactions,
                    &change,
                    network::Change::Deny,
                )
                .await
            }
        }
    }

    /// An action asked for while a turn runs: only those that leave the
    /// turn's state alone (see `turn_view`).
    fn act_during_turn(
        &mut self,
        action: SessionAction,
        view: &TurnView,
        after: &mut After,
    ) -> Result<String, ExtError> {
        match action {
            SessionAction::Exit => {
                *after = After::Exit;
                Ok("stopping the turn; bye".into())
            }
            SessionAction::SaveAndClose => {
                // The turn's end (it is cancelled now) saves the session.
                *after = After::Exit;
                Ok(format!(
                    "stopping the turn; saved; continue later with `stud --resume {}` (or `stud -c` in this folder)",
                    view.overview.session_id
                ))
            }
            SessionAction::Reload => Ok(self.reload(view.reloader.as_deref())),
            other => Err(ext_error(
                ErrorClass::Session,
                "turn-running",
                format!(
                    "{} cannot be done while a turn is running; run the command again when the turn has ended (Esc stops the turn)",
                    action_name(&other)
                ),
            )),
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, ExtError> {
    serde_json::to_string(v)
        .map_err(|e| ext_error(ErrorClass::ExtensionHost, "encode", e.to_string()))
}

/// Actions a repository must not take for the person, even through a
/// command the person typed: attaching a state machine hands tool
/// approvals to its stage envelopes (see `workflow::attach`).
fn loosens(a: &SessionAction) -> bool {
    matches!(a, SessionAction::AttachStateMachine(_))
}

fn action_name(a: &SessionAction) -> &'static str {
    match a {
        SessionAction::SwitchModel(_) => "switch-model",
        SessionAction::SwitchProvider(_) => "switch-provider",
        SessionAction::Compact => "compact",
        SessionAction::Clear => "clear",
        SessionAction::SaveAndClose => "save-and-close",
        SessionAction::Exit => "exit",
        SessionAction::Reload => "reload",
        SessionAction::AttachStateMachine(_) => "attach-state-machine",
        SessionAction::Resume(_) => "resume",
        SessionAction::NetworkAllow(_) => "network-allow",
        SessionAction::NetworkDeny(_) => "network-deny",
    }
}
