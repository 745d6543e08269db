//! Imports every kind has: types, log, events, state slot, config, clock,
//! cancellation.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::runtime::contract::v0_1::stud::extension::{
    cancel, clock, command_types, config, context_provider_types, events, hook_types, log,
    provider_types, session_store_types, state, state_machine_types, tool_types, types,
};
use crate::runtime::host_state::HostState;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};
use stud_protocol::events::KernelEvent;

impl types::Host for HostState {}
impl provider_types::Host for HostState {}
impl tool_types::Host for HostState {}
impl hook_types::Host for HostState {}
impl context_provider_types::Host for HostState {}
impl state_machine_types::Host for HostState {}
impl command_types::Host for HostState {}
impl session_store_types::Host for HostState {}

/// Longest log line or event payload kept; longer ones are cut.
const MAX_TEXT: usize = 64 * 1024;

fn clip(text: &str) -> &str {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A payload of `bytes` bytes of JSON, kept whole when it fits, else
/// replaced by a note and the start of its text: cutting the JSON text
/// itself would leave something that does not parse (it became `null`).
fn bounded(payload: serde_json::Value, bytes: usize) -> serde_json::Value {
    if bytes <= MAX_TEXT {
        return payload;
    }
    let text = payload.to_string();
    let preview: String = text.chars().take(4000).collect();
    serde_json::json!({"truncated": true, "bytes": bytes, "preview": preview})
}

impl log::Host for HostState {
    async fn log(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        if self.ext.admit_emit() {
            self.ext.services.log(&self.ext.id, level, clip(&message));
        }
        Ok(())
    }
}

impl events::Host for HostState {
    async fn emit(&mut self, name: String, payload: String) -> wasmtime::Result<()> {
        // First, before any work: a flood must stay cheap for the host.
        if !self.ext.admit_emit() {
            return Ok(());
        }
        let valid_name = !name.is_empty()
            && name.len() <= 128
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let parsed = serde_json::from_str::<serde_json::Value>(&payload);
        if !valid_name || parsed.is_err() {
            self.ext.services.log(
                &self.ext.id,
                log::Level::Warn,
                &format!(
                    "dropped event `{}`: names are [A-Za-z0-9._-]{{1,128}} and payloads JSON",
                    clip(&name)
                ),
            );
            return Ok(());
        }
        // Progress of a running tool call becomes the kernel's
        // `tool.progress`, tied to the call, so any UI can show it.
        let payload = bounded(parsed.unwrap_or_default(), payload.len());
        if let (Some(call_id), "progress") = (&self.call_id, name.as_str()) {
            self.ext.services.kernel_event(KernelEvent::ToolProgress {
                call_id: call_id.clone(),
                extension: self.ext.id.to_string(),
                progress: payload,
            });
            return Ok(());
        }
        let full = format!("ext.{}.{}", self.ext.id, name);
        self.ext
            .services
            .emit(&self.ext.id, &full, &payload.to_string());
        Ok(())
    }
}

impl state::Host for HostState {
    async fn read(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(self.ext.slot.read())
    }

    async fn write(&mut self, value: String) -> wasmtime::Result<Result<(), ExtError>> {
        Ok(self
            .ext
            .slot
            .write(value)
            .map_err(|m| ext_error(ErrorClass::Validation, "state-invalid", m)))
    }
}

impl config::Host for HostState {
    async fn get(&mut self) -> wasmtime::Result<String> {
        Ok(self.ext.config.clone())
    }
}

impl clock::Host for HostState {
    async fn now_ms(&mut self) -> wasmtime::Result<u64> {
        Ok(SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0))
    }

    async fn monotonic_ns(&mut self) -> wasmtime::Result<u64> {
        Ok(monotonic_start().elapsed().as_nanos() as u64)
    }
}

fn monotonic_start() -> std::time::Instant {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *START.get_or_init(std::time::Instant::now)
}

impl cancel::Host for HostState {
    async fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.deadline.is_cancelled())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_payload_stays_json() {
        let big = serde_json::json!({"message": "x".repeat(MAX_TEXT * 2)});
        let n = big.to_string().len();
        let out = bounded(big, n);
        assert_eq!(out["truncated"], true);
        assert_eq!(out["bytes"], n);
        assert!(
            out["preview"]
                .as_str()
                .unwrap()
                .starts_with("{\"message\":\"xxx")
        );
        let small = serde_json::json!({"a": 1});
        assert_eq!(bounded(small.clone(), 7), small);
    }
}
