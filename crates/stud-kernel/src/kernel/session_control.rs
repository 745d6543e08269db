//! What commands change or read between turns: the provider, a compaction
//! on request, the context the next request will take, the extension that
//! serves an id now.

use std::sync::Arc;

use stud_protocol::events::KernelEvent;

use super::act::{Lane, MainLane};
use super::roster::SessionError;
use super::session::Session;
use crate::runtime::Extension;
use crate::runtime::domain::Request;

impl Session {
    /// Switch provider (`/provider`): its first model, after the same
    /// checks as a model switch; a refused switch changes nothing.
    pub async fn set_provider(&mut self, provider: Arc<Extension>) -> Result<(), SessionError> {
        let id = provider.id().to_string();
        let models = provider
            .provider_models()
            .await
            .map_err(|reason| SessionError::Models {
                provider: id.clone(),
                reason,
            })?;
        let Some(info) = models.first() else {
            return Err(SessionError::UnknownModel {
                model: "(any)".into(),
                provider: id,
                offered: "(none)".into(),
            });
        };
        self.check_switch(&id, info)?;
        let model = info.id.clone();
        let from = self.roster.provider_id().to_string();
        self.roster.provider = provider;
        self.roster.model = model.clone();
        self.roster.models = models;
        self.bus.record(KernelEvent::ProviderChanged {
            from,
            to: id,
            model,
        });
        Ok(())
    }

    /// The next request as the session would send it (before hooks and
    /// context providers), for estimates.
    /// `with_history: false` leaves the messages out (an estimate passes
    /// them by reference instead of copying the history).
    fn next_request(&self, with_history: bool) -> Request {
        Request {
            system: self.config.system_prompt.clone(),
            messages: if with_history {
                self.conversation.messages.clone()
            } else {
                Vec::new()
            },
            tools: self.roster.tools.definitions(),
            params: self.request_params(),
        }
    }

    /// Estimated tokens of the next request.
    pub fn context_tokens(&self) -> u64 {
        let request = self.next_request(false);
        self.conversation
            .tokens_with(&request, &self.conversation.messages)
    }

    /// `/compact`: compact now, whatever the context use. Says what it did.
    pub async fn compact_now(&mut self) -> String {
        let request = self.next_request(true);
        let before = self.conversation.tokens_with(&request, &request.messages);
        if self
            .roster
            .capabilities()
            .is_none_or(|c| c.context_window == 0)
        {
            return format!(
                "model {} does not say how large its context window is, so there is nothing to compact against",
                self.roster.model
            );
        }
        let changed = MainLane(self).fit(&request, true).await;
        let after = self.context_tokens();
        if changed {
            format!("compacted: the next request takes about {after} tokens (was {before})")
        } else {
            format!(
                "nothing to compact: the history is short ({before} tokens, {} messages)",
                self.history().len()
            )
        }
    }

    /// The extension that serves `ext`'s id now (a hot reload may have
    /// replaced the one loaded at start).
    pub fn current_extension(&self, ext: &Arc<Extension>) -> Arc<Extension> {
        self.reloader
            .as_ref()
            .and_then(|r| r.current(ext.id().as_str()))
            .unwrap_or_else(|| ext.clone())
    }
}
