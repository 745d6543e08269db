//! What a turn-safe command works on while a turn runs. The running turn
//! holds the session, so a command typed meanwhile reads a snapshot taken
//! when the turn started (`turn_running` set; this turn's usage and
//! messages are not in it yet), and only takes actions that leave the
//! turn's state alone: exit and save-and-close (the turn is cancelled
//! first, the session saved as at every turn's end) and reload (swapped in
//! at the next stage boundary). Anything else is refused as busy.

use std::sync::Arc;

use stud_protocol::session_view::Overview;

use crate::kernel::reload::Reloader;
use crate::kernel::session::Session;
use crate::runtime::Extension;

/// Where the saved sessions of this project are listed from.
pub(super) struct SessionsSource {
    pub store: Arc<Extension>,
    pub project_root: String,
    pub current: String,
    /// Waited for before listing, so the list shows this session's newest
    /// manifest.
    pub manifests: crate::kernel::manifest_writer::ManifestWriter,
}

pub struct TurnView {
    pub(super) overview: Overview,
    pub(super) sessions: Option<SessionsSource>,
    pub(super) reloader: Option<Arc<Reloader>>,
}

impl TurnView {
    pub(super) fn of(overview: Overview, session: &Session) -> Self {
        TurnView {
            overview: Overview {
                turn_running: true,
                ..overview
            },
            sessions: session.conversation.log.as_ref().map(|log| SessionsSource {
                store: log.store.clone(),
                project_root: log.project_root.clone(),
                current: session.id.clone(),
                manifests: log.manifests.clone(),
            }),
            reloader: session.reloader.clone(),
        }
    }
}

/// What a command's session requests act on.
pub(super) enum Access<'a> {
    /// No turn runs: the live session.
    Live(&'a mut Session),
    /// A turn runs: its snapshot.
    Turn(&'a TurnView),
}
