//! How a running command reaches the session. The `session` import of the
//! command's instance sends its request here; the dispatcher, which holds
//! the session while the command runs, answers each in order. Only the
//! command being dispatched has an open bridge: any other extension (or a
//! command outside its own dispatch) is refused.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::manifest::ExtensionId;
use crate::runtime::services::{BoxFuture, ErrorClass, ExtError, SessionRequest, ext_error};

/// One request and where its answer goes.
pub struct Pending {
    pub request: SessionRequest,
    pub reply: oneshot::Sender<Result<String, ExtError>>,
}

#[derive(Default)]
pub struct Bridge {
    open: Mutex<Option<(ExtensionId, mpsc::UnboundedSender<Pending>)>>,
}

/// Closes the bridge when the dispatch ends, however it ends.
pub struct Open {
    bridge: Arc<Bridge>,
    pub requests: mpsc::UnboundedReceiver<Pending>,
}

impl Drop for Open {
    fn drop(&mut self) {
        *self.bridge.open.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Bridge {
    /// Open for `id` until the returned guard is dropped.
    pub fn open(self: &Arc<Self>, id: ExtensionId) -> Open {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = Some((id, tx));
        Open {
            bridge: self.clone(),
            requests: rx,
        }
    }

    pub fn send(
        &self,
        ext: &ExtensionId,
        request: SessionRequest,
    ) -> BoxFuture<'static, Result<String, ExtError>> {
        let tx = match &*self.open.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((id, tx)) if id == ext => Some(tx.clone()),
            _ => None,
        };
        let ext = ext.clone();
        Box::pin(async move {
            let refused = || {
                ext_error(
                    ErrorClass::Session,
                    "not-dispatched",
                    format!("`{ext}` may use the session only while it runs as a command"),
                )
            };
            let tx = tx.ok_or_else(refused)?;
            let (reply, answer) = oneshot::channel();
            tx.send(Pending { request, reply }).map_err(|_| refused())?;
            answer.await.map_err(|_| refused())?
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::services::SessionView;

    fn id(s: &str) -> ExtensionId {
        s.parse().expect("test id")
    }

    /// The error code a request from `ext` gets, if refused.
    async fn refusal(bridge: &Bridge, ext: &str) -> Option<String> {
        bridge
            .send(&id(ext), SessionRequest::Read(SessionView::Overview))
            .await
            .err()
            .map(|e| e.code)
    }

    #[tokio::test]
    async fn only_the_command_being_dispatched_reaches_the_session() {
        let bridge = Arc::new(Bridge::default());
        // Nothing dispatched: refused.
        assert_eq!(
            refusal(&bridge, "cost").await.as_deref(),
            Some("not-dispatched")
        );
        let mut open = bridge.open(id("cost"));
        // Another extension while `cost` runs: refused.
        assert_eq!(
            refusal(&bridge, "thief").await.as_deref(),
            Some("not-dispatched")
        );
        // The dispatched one gets the dispatcher's answer.
        let asked = bridge.send(&id("cost"), SessionRequest::Read(SessionView::Overview));
        let answer = tokio::spawn(asked);
        let pending = open.requests.recv().await.expect("request arrives");
        let _ = pending.reply.send(Ok("{}".into()));
        assert_eq!(
            answer.await.ok().and_then(Result::ok).as_deref(),
            Some("{}")
        );
        drop(open);
        // After the dispatch: refused again.
        assert_eq!(
            refusal(&bridge, "cost").await.as_deref(),
            Some("not-dispatched")
        );
    }
}
