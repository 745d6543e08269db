//! The editor's file system (`fs/read_text_file`, `fs/write_text_file`)
//! behind the kernel's [`EditorFiles`], offered when the client says it
//! can do both.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::{ConnectionTo, schema};
use serde_json::json;

use crate::kernel::editor_files::{EditorFiles, EditorFuture};

pub struct AcpFiles {
    conn: ConnectionTo<Client>,
    /// The ACP session the requests belong to; known once it started.
    pub session: Arc<OnceLock<String>>,
}

impl AcpFiles {
    pub fn new(conn: ConnectionTo<Client>) -> Self {
        AcpFiles {
            conn,
            session: Default::default(),
        }
    }
}

fn schema_of<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| format!("a request did not fit the ACP schema: {e}"))
}

fn editor_said(e: agent_client_protocol::Error) -> String {
    match e.data {
        Some(data) => format!("the editor refused: {} ({data})", e.message),
        None => format!("the editor refused: {}", e.message),
    }
}

impl EditorFiles for AcpFiles {
    fn read(&self, path: PathBuf) -> EditorFuture<String> {
        let conn = self.conn.clone();
        let session = self.session.get().cloned();
        Box::pin(async move {
            let request: schema::ReadTextFileRequest =
                schema_of(json!({"sessionId": session, "path": path}))?;
            let r = conn
                .send_request(request)
                .block_task()
                .await
                .map_err(editor_said)?;
            Ok(r.content)
        })
    }

    fn write(&self, path: PathBuf, content: String) -> EditorFuture<()> {
        let conn = self.conn.clone();
        let session = self.session.get().cloned();
        Box::pin(async move {
            let request: schema::WriteTextFileRequest =
                schema_of(json!({"sessionId": session, "path": path, "content": content}))?;
            conn.send_request(request)
                .block_task()
                .await
                .map_err(editor_said)?;
            Ok(())
        })
    }
}
