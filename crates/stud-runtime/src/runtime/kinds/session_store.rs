use super::guest_call;
use crate::runtime::contract::v0_1::stud::extension::session_store_types::{
    SessionData, SessionSummary,
};
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn store_append(
        &self,
        session_id: &str,
        records: &[String],
    ) -> Result<(), CallError> {
        let (session_id, records) = (session_id.to_string(), records.to_vec());
        guest_call!(self, SessionStore, "append", |g, store| g
            .call_append(store, &session_id, &records)
            .await)
    }

    pub async fn store_write_manifest(
        &self,
        session_id: &str,
        manifest: &str,
    ) -> Result<(), CallError> {
        let (session_id, manifest) = (session_id.to_string(), manifest.to_string());
        guest_call!(self, SessionStore, "write-manifest", |g, store| {
            g.call_write_manifest(store, &session_id, &manifest).await
        })
    }

    pub async fn store_read(&self, session_id: &str) -> Result<SessionData, CallError> {
        let session_id = session_id.to_string();
        guest_call!(self, SessionStore, "read", |g, store| g
            .call_read(store, &session_id)
            .await)
    }

    pub async fn store_list(&self) -> Result<Vec<SessionSummary>, CallError> {
        guest_call!(self, SessionStore, "list", |g, store| g
            .call_list(store)
            .await)
    }

    pub async fn store_delete(&self, session_id: &str) -> Result<(), CallError> {
        let session_id = session_id.to_string();
        guest_call!(self, SessionStore, "delete", |g, store| g
            .call_delete(store, &session_id)
            .await)
    }
}
