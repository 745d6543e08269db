//! A session's link to one MCP server: the live connection, replaced when
//! it is lost. A call that finds the connection gone starts the server
//! again first (250 ms doubling to 4 s between attempts, ±20 % jitter, 5
//! attempts). A call that was in flight when the connection broke is not
//! sent again (the server may have acted on it): it fails, saying so, and
//! the next call reconnects. The tools of a server share its link, so one
//! reconnection serves them all.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::Value;
use tokio::sync::RwLock;

use super::client::{self, CallError, McpConnection};
use super::config::McpServer;

/// What happened to a link, for the kernel's events.
#[derive(Debug, Clone)]
pub enum LinkEvent {
    Lost { reason: String },
    Attempt { attempt: u32, delay: Duration },
    Connected { info: String },
    GaveUp { reason: String },
}

pub type Observer = Arc<dyn Fn(&str, LinkEvent) + Send + Sync>;

const FIRST_DELAY: Duration = Duration::from_millis(250);
const MAX_DELAY: Duration = Duration::from_secs(4);
pub const ATTEMPTS: u32 = 5;

/// The wait before attempt `n` (1-based): 250 ms doubling to 4 s, with
/// jitter. Shared by reconnection and by the retries of a failed start.
pub fn backoff(n: u32) -> Duration {
    let base = FIRST_DELAY.saturating_mul(1 << n.saturating_sub(1).min(8));
    jitter(base.min(MAX_DELAY))
}

pub struct McpLink {
    server: McpServer,
    cwd: PathBuf,
    log: PathBuf,
    conn: RwLock<Arc<McpConnection>>,
    observer: Observer,
    /// Roots and elicitation, for a reconnection too.
    side: client::ClientSide,
}

impl McpLink {
    pub fn new(
        server: McpServer,
        cwd: PathBuf,
        log: PathBuf,
        conn: McpConnection,
        observer: Observer,
        side: client::ClientSide,
    ) -> Self {
        McpLink {
            server,
            cwd,
            log,
            conn: RwLock::new(Arc::new(conn)),
            observer,
            side,
        }
    }

    pub fn id(&self) -> &str {
        &self.server.id
    }

    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// The live connection, started again first when it was lost.
    pub async fn connection(&self) -> Result<Arc<McpConnection>, CallError> {
        let conn = self.conn.read().await.clone();
        if !conn.is_lost() {
            return Ok(conn);
        }
        (self.observer)(
            &self.server.id,
            LinkEvent::Lost {
                reason: "the server's connection is closed".into(),
            },
        );
        self.reconnect(&conn).await?;
        Ok(self.conn.read().await.clone())
    }

    /// The connection as it is (lost or not), without reconnecting.
    pub async fn current(&self) -> Arc<McpConnection> {
        self.conn.read().await.clone()
    }

    /// Whether the connection is lost now (without waiting or
    /// reconnecting; a reconnection under way counts as lost).
    pub fn lost_now(&self) -> bool {
        self.conn.try_read().map_or(true, |c| c.is_lost())
    }

    /// Replace the connection now (`/mcp reconnect`), whatever its state.
    pub async fn restart(&self) -> Result<(), CallError> {
        let conn = self.conn.read().await.clone();
        self.reconnect(&conn).await
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        let conn = self.connection().await?;
        conn.call(tool, arguments).await.map_err(|e| match e {
            CallError::Lost { server, reason } => {
                (self.observer)(
                    &server,
                    LinkEvent::Lost {
                        reason: reason.clone(),
                    },
                );
                CallError::Lost {
                    server,
                    reason: format!(
                        "{reason}; the call may or may not have run; the server is started again at the next call"
                    ),
                }
            }
            other => other,
        })
    }

    /// Replace `dead` with a new connection (unless another call already
    /// did).
    async fn reconnect(&self, dead: &Arc<McpConnection>) -> Result<(), CallError> {
        let mut current = self.conn.write().await;
        if !Arc::ptr_eq(&current, dead) {
            return Ok(());
        }
        let timeout = self.server.start_timeout.unwrap_or(client::START_TIMEOUT);
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            let wait = backoff(attempt);
            (self.observer)(
                &self.server.id,
                LinkEvent::Attempt {
                    attempt,
                    delay: wait,
                },
            );
            tokio::time::sleep(wait).await;
            match client::connect(
                &self.server,
                &self.cwd,
                &self.log,
                timeout,
                &client::process_env,
                &self.side,
            )
            .await
            {
                Ok(c) => {
                    let info = c.server_info.clone();
                    *current = Arc::new(c);
                    (self.observer)(&self.server.id, LinkEvent::Connected { info });
                    return Ok(());
                }
                Err(e) => last = e.to_string(),
            }
        }
        let reason = format!("it could not be started again in {ATTEMPTS} attempts: {last}");
        (self.observer)(
            &self.server.id,
            LinkEvent::GaveUp {
                reason: reason.clone(),
            },
        );
        Err(CallError::Lost {
            server: self.server.id.clone(),
            reason,
        })
    }
}

/// `d` ±20 %, so servers lost together do not restart in lockstep.
fn jitter(d: Duration) -> Duration {
    let mut b = [0u8; 1];
    let _ = getrandom::fill(&mut b);
    d.mul_f64(0.8 + f64::from(b[0]) / 255.0 * 0.4)
}
