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

const FIRST_DELAY: Duration = Duration::from_millis(250);
const MAX_DELAY: Duration = Duration::from_secs(4);
const ATTEMPTS: u32 = 5;

pub struct McpLink {
    server: McpServer,
    cwd: PathBuf,
    log: PathBuf,
    conn: RwLock<Arc<McpConnection>>,
}

impl McpLink {
    pub fn new(server: McpServer, cwd: PathBuf, log: PathBuf, conn: McpConnection) -> Self {
        McpLink {
            server,
            cwd,
            log,
            conn: RwLock::new(Arc::new(conn)),
        }
    }

    pub fn id(&self) -> &str {
        &self.server.id
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        let mut conn = self.conn.read().await.clone();
        if conn.is_lost() {
            self.reconnect(&conn).await?;
            conn = self.conn.read().await.clone();
        }
        conn.call(tool, arguments).await.map_err(|e| match e {
            CallError::Lost { server, reason } => CallError::Lost {
                server,
                reason: format!(
                    "{reason}; the call may or may not have run; the server is started again at the next call"
                ),
            },
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
        let mut delay = FIRST_DELAY;
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            tokio::time::sleep(jitter(delay)).await;
            match client::connect(
                &self.server,
                &self.cwd,
                &self.log,
                timeout,
                &client::process_env,
            )
            .await
            {
                Ok(c) => {
                    *current = Arc::new(c);
                    return Ok(());
                }
                Err(e) => last = e.to_string(),
            }
            if attempt < ATTEMPTS {
                delay = (delay * 2).min(MAX_DELAY);
            }
        }
        Err(CallError::Lost {
            server: self.server.id.clone(),
            reason: format!("it could not be started again in {ATTEMPTS} attempts: {last}"),
        })
    }
}

/// `d` ±20 %, so servers lost together do not restart in lockstep.
fn jitter(d: Duration) -> Duration {
    let mut b = [0u8; 1];
    let _ = getrandom::fill(&mut b);
    d.mul_f64(0.8 + f64::from(b[0]) / 255.0 * 0.4)
}
