//! A session: the loaded extension set arranged for the loop (provider,
//! tool table, hook slots, authority, interactors), the history, and the
//! settings fixed at start (security mode, loop bound, parallelism).

use std::sync::Arc;

use super::authority::Authority;
use super::capabilities::{check_request, check_session};
use super::compaction::CompactionConfig;
use super::conversation::Conversation;
use super::events::Bus;
use super::first_request::FirstRequest;
use super::interaction::{Answer, Interactions};
use super::reload::{Ready, Reloader};
use super::retry::RetryPolicy;
use super::roster::{Roster, RosterChoice, SessionError};
use super::usage::UsageLedger;
use crate::extensions::consent;
use crate::manifest::{Kind, ReloadBehavior};
use crate::runtime::Extension;
use crate::runtime::domain::{InteractionKind, InteractionStatus};
use crate::runtime::domain::{Message, Usage};
use crate::runtime::domain::{ModelInfo, Request, RequestParams, ThinkingLevel};
use stud_protocol::events::KernelEvent;

/// Default bound on provider requests per turn
/// (`runtime.continuation.maxIterations`).
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;
/// Default number of tool calls run at once.
pub const DEFAULT_TOOL_PARALLELISM: usize = 4;
/// Default `runtime.toolOutputLimit` (bytes).
pub const DEFAULT_TOOL_OUTPUT_LIMIT: usize = 64 * 1024;

#[derive(Clone)]
pub struct SessionConfig {
    pub provider: String,
    pub model: Option<String>,
    pub max_iterations: u32,
    pub tool_parallelism: usize,
    /// Bytes of tool output sent to the model; the rest is cut with a marker.
    pub tool_output_limit: usize,
    /// What one model response may bring.
    pub response_limits: super::response_limits::ResponseLimits,
    pub system_prompt: Option<String>,
    /// Hook extension ids that run first, in this order.
    pub hook_order: Vec<super::hooks::HookOrder>,
    /// Offer the loaded tools to the model (`--no-tools` turns it off).
    pub tools_enabled: bool,
    pub retry: RetryPolicy,
    pub compaction: CompactionConfig,
    /// Prices per model id (settings `pricing`).
    pub pricing: std::collections::HashMap<String, crate::config::Price>,
    /// Stop before a request once the session cost reached this (USD).
    pub max_cost_usd: Option<f64>,
    /// Request parameters from settings (`active.*`).
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub thinking: ThinkingLevel,
    pub cache_hints: bool,
    /// The Agent Skills in scope (their catalogue joins the system prompt
    /// while the `skill` tool is offered).
    pub skills: Arc<super::skills::SkillCatalog>,
}

/// What a session is made of besides its extensions, all built before it
/// (launch's `parts` phase): nothing is set on a session after it is made.
pub struct SessionParts {
    /// A resumed session's id; `None` makes a new one.
    pub id: Option<String>,
    pub config: SessionConfig,
    pub authority: Authority,
    pub interactions: Arc<Interactions>,
    pub bus: Bus,
    pub first_request: FirstRequest,
    /// The extension set chosen for it (recorded in its manifest).
    pub extension_set: Option<super::extension_set::ExtensionSet>,
    /// An editor's files, in place of the disk for `read`, `write`, `edit`.
    pub editor: Option<super::editor_files::EditorRoute>,
    /// The agents `task` can start.
    pub agents: Arc<super::agent_catalog::AgentCatalog>,
    /// Offer the model the `task` tool.
    pub offer_task: bool,
    /// Offer the model the `skill` tool.
    pub offer_skill: bool,
    /// The session's MCP servers.
    pub mcp: Arc<super::mcp_hub::McpHub>,
    /// Tools of the servers already up (a headless run waits for them).
    pub mcp_tools: super::mcp_hub::NewTools,
    /// Swaps in changed extensions at stage boundaries.
    pub reloader: Option<Arc<Reloader>>,
    /// Where its checkpoints go (`None`: `checkpoints.enabled` is false).
    pub checkpoints: Option<CheckpointPlace>,
}

/// What a session's checkpoints are made from once its id is known.
pub struct CheckpointPlace {
    pub home: std::path::PathBuf,
    pub project: std::path::PathBuf,
    pub settings: super::checkpoints::CheckpointSettings,
}

/// A session is its owned parts (the extension roster, the
/// conversation, the usage ledger) plus the authority over tool calls, the
/// settings fixed at start and the attached workflow. The parts do not
/// know the session; the loop (`turn`, `act`, `workflow`) works on it.
pub struct Session {
    pub id: String,
    pub bus: Bus,
    pub(crate) roster: Roster,
    pub(crate) conversation: Conversation,
    pub(crate) ledger: UsageLedger,
    pub(crate) authority: Authority,
    pub(crate) interactions: Arc<Interactions>,
    pub(crate) config: SessionConfig,
    pub(crate) reloader: Option<Arc<Reloader>>,
    /// Reloads compiled and waiting for a boundary their behaviour allows.
    pub(crate) pending_reloads: Vec<Ready>,
    /// The attached state machine, if any.
    pub(crate) workflow: Option<super::workflow_def::Attached>,
    /// Where its workflow stands (restored on resume).
    pub(crate) workflow_position: Option<super::workflow_def::Position>,
    /// The extension set chosen for it (recorded in its manifest).
    pub extension_set: Option<super::extension_set::ExtensionSet>,
    /// Text for the running turn, taken at its next stage boundary.
    pub steering: super::steering::Steering,
    /// The session's MCP servers.
    pub(crate) mcp: Arc<super::mcp_hub::McpHub>,
    /// The agents `task` can start.
    pub(crate) agents: Arc<super::agent_catalog::AgentCatalog>,
    /// Where it sits in a delegation tree (`main` unless it is a child).
    pub(crate) lineage: super::agent_catalog::Lineage,
    /// What each extension costs (a child's calls count in its parent's).
    pub(crate) metering: super::metering::Metering,
    /// Inside an editor that offers its files: where `read`, `write` and
    /// `edit` go instead of the disk.
    pub(crate) editor: Option<super::editor_files::EditorRoute>,
    /// What lives for the running (or next) turn only.
    pub(crate) turn: super::turn_context::TurnContext,
    /// Plan mode is on: each turn may use only read-only tools.
    pub(crate) plan: bool,
    /// Opened once its first provider request is out.
    pub(crate) first_request: super::first_request::FirstRequest,
    /// Snapshots before its turns' changes (a child's changes belong to
    /// its parent's turn: a child has none).
    pub(crate) checkpoints: Option<Arc<super::checkpoints::Checkpoints>>,
}

impl Session {
    /// Send `images` with the next turn's input. Refused, naming the
    /// model, when the model is known to lack vision: the image would
    /// stay in the history and fail every later request.
    pub fn attach_images(
        &mut self,
        images: Vec<crate::runtime::domain::Image>,
    ) -> Result<(), String> {
        if !images.is_empty()
            && let Some(caps) = self.roster.capabilities()
            && !caps.vision
        {
            return Err(format!(
                "model `{}` of provider `{}` has no vision; pick a model with vision (/model) or send the prompt without images",
                self.roster.model,
                self.provider_id()
            ));
        }
        self.turn.images = images;
        Ok(())
    }

    /// The attached state machine's entry stage and all its stages (as
    /// `workflow.attached` names them); `None` without one.
    pub fn workflow_stages(&self) -> Option<(String, Vec<String>)> {
        let w = &self.workflow.as_ref()?.workflow;
        Some((w.entry.clone(), w.stages.keys().cloned().collect()))
    }

    /// Have the session written where `persistence` says, from its start
    /// on: the launch attaches it once the session store has started,
    /// which it does beside the session's own start.
    pub(crate) fn keep_in(&mut self, persistence: super::persist::Persistence) {
        self.conversation.log = Some(persistence);
    }

    /// Make a session of loaded extensions and its parts. Returns
    /// warnings for tools that could not be added. Its observers and
    /// deferred links wait for `first_request` (open: they do not wait).
    pub async fn start(
        exts: &[Arc<Extension>],
        parts: SessionParts,
    ) -> Result<(Session, Vec<String>), SessionError> {
        let SessionParts {
            id,
            config,
            authority,
            interactions,
            bus,
            first_request,
            extension_set,
            editor,
            agents,
            offer_task,
            offer_skill,
            mcp,
            mcp_tools,
            reloader,
            checkpoints,
        } = parts;
        let choice = RosterChoice {
            provider: &config.provider,
            model: config.model.as_deref(),
            tools_enabled: config.tools_enabled,
            hook_order: &config.hook_order,
            first_request: &first_request,
        };
        let (roster, mut warnings) = Roster::arrange(exts, choice, bus.clone()).await?;
        let conversation = Conversation::new(bus.clone());
        let id = id.unwrap_or_else(session_id);
        let checkpoints = checkpoints.map(|c| {
            let c = super::checkpoints::Checkpoints::open(&c.home, &c.project, &id, &c.settings);
            c.prune_in_background();
            Arc::new(c)
        });
        let mut session = Session {
            id,
            roster,
            conversation,
            ledger: UsageLedger::new(config.pricing.clone(), config.max_cost_usd),
            bus,
            authority,
            interactions,
            config,
            reloader,
            pending_reloads: Vec::new(),
            workflow: None,
            workflow_position: None,
            extension_set,
            steering: Default::default(),
            mcp,
            agents,
            lineage: Default::default(),
            metering: super::metering::Metering::new(exts),
            editor,
            turn: Default::default(),
            plan: false,
            first_request,
            checkpoints,
        };
        if offer_task
            && let Err(e) = session.roster.tools.add_kernel_tool(
                super::tools::ToolRunner::Task,
                super::agent_catalog::task_spec(&session.agents),
            )
        {
            warnings.push(e);
        }
        if offer_skill
            && let Err(e) = session.roster.tools.add_kernel_tool(
                super::tools::ToolRunner::Skill,
                super::skills::skill_spec(&session.config.skills),
            )
        {
            warnings.push(e);
        }
        warnings.extend(session.add_mcp_tools(mcp_tools));
        Ok((session, warnings))
    }

    /// Say the session started (once its id is final: a resumed session
    /// keeps the id it had).
    pub fn announce(&self) {
        self.bus.record(KernelEvent::SessionStart {
            session_id: self.id.clone(),
            provider: self.roster.provider_id().to_string(),
            model: self.roster.model.clone(),
            mode: self.authority.mode().as_str().into(),
            tools: self
                .roster
                .tools
                .names()
                .into_iter()
                .map(Into::into)
                .collect(),
            extension_set: self.extension_set.as_ref().map(|s| s.describe()),
            context_window: self
                .roster
                .capabilities()
                .map(|c| u64::from(c.context_window))
                .filter(|w| *w > 0),
        });
    }

    /// Model parameters of every request.
    pub(crate) fn request_params(&self) -> RequestParams {
        self.act_parts().request_params()
    }

    /// Switch model (`/model`). The session's needs are checked against
    /// the new model first; a refused switch keeps the current one.
    pub fn set_model(&mut self, model: &str) -> Result<(), SessionError> {
        let info = self.roster.find_model(model)?;
        self.check_switch(self.roster.provider_id(), info)?;
        let to = info.id.clone();
        let from = std::mem::replace(&mut self.roster.model, to.clone());
        self.bus.record(KernelEvent::ModelChanged {
            provider: self.roster.provider_id().into(),
            from,
            to,
        });
        Ok(())
    }

    /// Whether `provider`'s model `info` can serve this session: its tools
    /// now, and what the next request will carry (the conversation's
    /// images, the thinking setting).
    pub(crate) fn check_switch(
        &self,
        provider: &str,
        info: &ModelInfo,
    ) -> Result<(), SessionError> {
        check_session(
            provider,
            &info.id,
            &info.capabilities,
            self.roster.tools.len(),
        )?;
        let next = Request {
            system: None,
            messages: self.conversation.messages.clone(),
            tools: Vec::new(),
            params: RequestParams {
                model: info.id.clone(),
                ..self.request_params()
            },
        };
        check_request(provider, &info.id, &info.capabilities, &next)?;
        Ok(())
    }

    /// Forget the conversation (the next turn starts a fresh one).
    pub fn clear_history(&mut self) {
        self.conversation.clear(&self.id);
    }

    /// Whether the history still holds, after its first `keep` messages,
    /// the message whose digest is `first` (what a rewind of the
    /// conversation to `keep` messages needs).
    pub fn conversation_lines_up(&self, keep: usize, first: Option<&str>) -> bool {
        let messages = &self.conversation.messages;
        match first {
            Some(d) => messages
                .get(keep)
                .is_some_and(|m| super::checkpoints::message_digest(m) == d),
            None => keep <= messages.len(),
        }
    }

    /// Cut the conversation back to its first `keep` messages (a rewind),
    /// in the store too: a resume starts from what is left. `first` is
    /// the digest the first dropped message must have; a history that no
    /// longer lines up (compacted or cleared since) is refused.
    pub async fn rewind_conversation(
        &mut self,
        keep: usize,
        first: Option<&str>,
    ) -> Result<(), String> {
        let moved = "the conversation changed since that turn (compacted or cleared); only its files can be rewound";
        if !self.conversation_lines_up(keep, first) {
            return Err(moved.into());
        }
        self.conversation.messages.truncate(keep);
        let record = stud_protocol::session_records::SessionRecord::Compaction {
            tier: 0,
            removed: "rewound by the person".into(),
            history: self
                .conversation
                .messages
                .iter()
                .map(super::payloads::message_json)
                .collect(),
        };
        self.conversation
            .append_record(&self.id, record.to_line())
            .await;
        Ok(())
    }

    /// The session's checkpoints (`None` in a child, or when they are off).
    pub fn checkpoints(&self) -> Option<&Arc<super::checkpoints::Checkpoints>> {
        self.checkpoints.as_ref()
    }

    /// The extension serving tool `name`.
    pub fn tool_extension(&self, name: &str) -> Option<Arc<Extension>> {
        self.roster.tool_extension(name)
    }

    /// Hook registrations attached (for reports and benchmarks).
    pub fn hook_registrations(&self) -> usize {
        self.roster.hooks.registrations()
    }

    /// Append to the conversation; with a store, the message is reported
    /// persisted (`message.persisted`) only once the store confirmed it.
    pub(crate) async fn append(&mut self, message: Message) {
        let first = !self.conversation.has_content();
        self.conversation.append(&self.id, message).await;
        self.saved_from_first_write(first).await;
    }

    /// Append a message the next request carries; the store writes it
    /// while the request is composed and sent (see [`Conversation`]'s
    /// docs), and [`settle`](Self::settle) waits for it.
    ///
    /// [`Conversation`]: super::conversation::Conversation
    pub(crate) async fn append_ahead(&mut self, message: Message) {
        let first = !self.conversation.has_content();
        self.conversation.append_ahead(&self.id, message).await;
        self.saved_from_first_write(first).await;
    }

    /// Wait for the message written ahead, if any.
    pub(crate) async fn settle(&self) {
        self.conversation.settle().await;
    }

    /// The manifest is written from the session's first stored message or
    /// record on (see `save_manifest`), so a session killed in its first
    /// turn can be continued.
    async fn saved_from_first_write(&self, was_empty: bool) {
        if was_empty && self.conversation.has_content() {
            self.save_manifest().await;
        }
    }

    /// Append a non-message record (compaction, workflow position) to the
    /// session's log.
    pub(crate) async fn append_record(&self, record: String) {
        let first = !self.conversation.has_content();
        self.conversation.append_record(&self.id, record).await;
        self.saved_from_first_write(first).await;
    }

    /// Whether plan mode is on.
    pub fn plan_mode(&self) -> bool {
        self.plan
    }

    /// Turn plan mode on or off (it applies from the next turn).
    pub fn set_plan_mode(&mut self, on: bool) {
        self.plan = on;
    }

    /// The tools offered now, with whether each is read-only.
    pub(crate) fn offered_tools(&self) -> Vec<(String, bool)> {
        self.roster
            .tools
            .names()
            .into_iter()
            .map(|n| {
                let read_only = self.roster.tools.get(n).is_some_and(|e| e.spec.read_only);
                (n.to_string(), read_only)
            })
            .collect()
    }

    /// The specs of the tools the model is offered (name, description,
    /// argument schema, read-only), for `stud mcp serve`.
    pub fn offered_tool_specs(&self) -> Vec<crate::runtime::domain::ToolSpec> {
        self.roster
            .tools
            .names()
            .into_iter()
            .filter_map(|n| self.roster.tools.get(n).map(|e| e.spec.clone()))
            .collect()
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        self.conversation.messages()
    }

    /// Tokens spent over the whole session.
    pub fn usage(&self) -> &Usage {
        &self.ledger.usage
    }

    /// What the session has cost (USD), when prices are known.
    pub fn cost_usd(&self) -> f64 {
        self.ledger.cost_usd
    }

    /// Whether the session has cost its budget (`--max-cost`); no turn
    /// can start then.
    pub fn budget_spent(&self) -> bool {
        self.ledger.budget_spent()
    }

    /// One request straight to the provider, drained (benchmarks: the
    /// provider's share of a turn).
    pub async fn provider_round_trip(&self, text: &str) {
        use crate::runtime::domain::{ContentPart, Role};
        let request = Request {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentPart::Text(text.into())],
            }],
            tools: self.roster.tools.definitions(),
            params: self.request_params(),
        };
        let provider = &self.roster.provider;
        if let Ok(mut stream) = provider.provider_send(&request).await {
            while let Ok(Some(_)) = provider.provider_next(&mut stream).await {}
        }
    }

    pub fn model(&self) -> &str {
        &self.roster.model
    }

    pub fn provider_id(&self) -> &str {
        self.roster.provider_id()
    }

    /// Watch for changed extensions from now on (see [`Reloader`]).
    /// The input with MCP prompts (`/mcp__server__prompt args` becomes the
    /// prompt's text) and resources (`@server:uri` attached) taken in.
    pub async fn mcp_input(&self, input: super::input::Input) -> super::input::Input {
        use super::input::Input;
        let text = match input {
            Input::Command { name, args } => {
                match super::mcp_input::prompt(&self.mcp, &name, &args.raw).await {
                    None => return Input::Command { name, args },
                    Some(Err(e)) => return Input::Invalid(e),
                    Some(Ok(text)) => text,
                }
            }
            Input::Prompt(text) => text,
            other => return other,
        };
        match super::mcp_input::attach(&self.mcp, &self.bus, text).await {
            Ok(t) => Input::Prompt(t),
            Err(e) => Input::Invalid(e),
        }
    }

    /// The MCP tools offered now (`mcp__<server>__<tool>`).
    /// The session's MCP servers (an editor's are started after it asks).
    pub fn mcp(&self) -> &Arc<super::mcp_hub::McpHub> {
        &self.mcp
    }

    /// The session's security mode.
    pub fn mode(&self) -> super::Mode {
        self.authority.mode()
    }

    /// The UI that answers questions, when one does.
    pub fn interactor(&self) -> Option<&Arc<crate::runtime::Extension>> {
        self.interactions.interactor()
    }

    pub fn mcp_tool_names(&self) -> Vec<String> {
        self.roster
            .tools
            .names()
            .into_iter()
            .filter(|n| {
                self.roster
                    .tools
                    .get(n)
                    .is_some_and(|t| matches!(t.runner, super::tools::ToolRunner::Mcp(_)))
            })
            .map(str::to_string)
            .collect()
    }

    /// Offer MCP tools the session's extension set keeps (a profile's or
    /// `--tools` list); one warning per tool left out for a clash.
    pub fn add_mcp_tools(&mut self, tools: super::mcp_hub::NewTools) -> Vec<String> {
        let kept = self.keeps_mcp(tools);
        self.roster.tools.add_mcp(kept)
    }

    fn keeps_mcp(&self, tools: super::mcp_hub::NewTools) -> super::mcp_hub::NewTools {
        tools
            .into_iter()
            .filter(|(_, spec)| {
                self.extension_set
                    .as_ref()
                    .is_none_or(|s| s.keeps_mcp_tool(&spec.name))
            })
            .collect()
    }

    /// Take up MCP servers' changed tool lists (`tools/list_changed`): at
    /// a stage boundary, so a request never sees half a change.
    pub async fn refresh_mcp_tools(&mut self) {
        let (started, warnings) = self.mcp.take_up_started();
        for w in warnings.into_iter().chain(self.add_mcp_tools(started)) {
            self.bus.publish(KernelEvent::Diagnostic {
                level: stud_protocol::events::Level::Warn,
                message: w,
            });
        }
        for (link, listed) in self.mcp.changed_tools().await {
            let server = link.id().to_string();
            let before = self.roster.tools.remove_mcp(&server);
            let (tools, warnings) = super::mcp_hub::tool_specs(&link, listed);
            let kept = self.keeps_mcp(tools);
            let after: Vec<String> = kept.iter().map(|(_, s)| s.name.clone()).collect();
            for w in warnings.into_iter().chain(self.roster.tools.add_mcp(kept)) {
                self.bus.publish(KernelEvent::Diagnostic {
                    level: stud_protocol::events::Level::Warn,
                    message: w,
                });
            }
            self.bus.record(KernelEvent::McpToolsChanged {
                server: server.clone(),
                added: after
                    .iter()
                    .filter(|n| !before.contains(n))
                    .cloned()
                    .collect(),
                removed: before
                    .iter()
                    .filter(|n| !after.contains(n))
                    .cloned()
                    .collect(),
            });
            self.mcp.set_tools(&server, after);
        }
    }

    /// Swap in finished reloads. `boundary` names the stage about to
    /// start, or `between-turns`. Providers change only between turns (a
    /// response in progress belongs to the old instance).
    pub(crate) async fn apply_reloads(&mut self, boundary: &str) {
        self.refresh_mcp_tools().await;
        let Some(reloader) = self.reloader.clone() else {
            return;
        };
        let mut ready = std::mem::take(&mut self.pending_reloads);
        ready.extend(reloader.finished().await);
        let between = boundary == "between-turns";
        for item in ready {
            let ext = item.ext.clone();
            let allowed = match ext.manifest.reload {
                ReloadBehavior::InTurn => between || ext.kind() != Kind::Provider,
                ReloadBehavior::BetweenTurns => between,
                ReloadBehavior::Never => false,
            };
            if !allowed {
                self.pending_reloads.push(item);
                continue;
            }
            let current = reloader.current(ext.id().as_str());
            if current.as_ref().is_some_and(|c| c.digest == ext.digest) {
                // Already serving these bytes.
                reloader.settle(&ext);
                continue;
            }
            if let Some(old) = &current
                && let Err(reason) = self.consent_to_growth(old, &ext).await
            {
                reloader.refuse(&ext, &reason);
                continue;
            }
            // The old version may have written its state since the new one
            // was compiled: carry the latest value over.
            if let Some(state) = current.as_ref().and_then(|old| old.state())
                && let Err(e) = ext.restore_state(state)
            {
                reloader.refuse(&ext, &e);
                continue;
            }
            match self.roster.swap(&ext).await {
                Ok(()) => {
                    self.metering.replace(&ext);
                    reloader.swapped(&ext, &item.from, boundary);
                    // The old version is done with: `deactivate` and
                    // `dispose` on its instances, beside the session.
                    if let Some(old) = current {
                        tokio::spawn(async move {
                            old.retire(crate::runtime::RETIRE_WITHIN).await;
                        });
                    }
                }
                Err(reason) => reloader.refuse(&ext, &reason),
            }
        }
    }

    /// A new version that asks for more than the running one was granted
    /// needs the user's yes (interactive); headless it is refused.
    async fn consent_to_growth(&self, old: &Extension, new: &Extension) -> Result<(), String> {
        let added = consent::added(&old.manifest.capabilities, &new.manifest.capabilities);
        if added.is_empty() {
            return Ok(());
        }
        let asks = format!(
            "the new version of `{}` asks for more than it was granted: {}",
            new.id(),
            added.join("; ")
        );
        if self.interactions.is_headless() {
            return Err(format!(
                "{asks}; a headless run cannot ask, so the old version keeps running (restart stud interactively to grant it)"
            ));
        }
        let question = InteractionKind::Confirm(format!("{asks}. Allow it?"));
        match self.interactions.request(question).await {
            Answer::Response(r) if r.status == InteractionStatus::Accepted => Ok(()),
            _ => Err(format!(
                "{asks}; you declined, so the old version keeps running"
            )),
        }
    }

    /// Let queued observer hooks finish and record the end.
    pub async fn close(&mut self) {
        self.flush_trace().await;
        self.roster.hooks.drain().await;
        self.flush_manifest().await;
        self.bus.record(KernelEvent::SessionEnd {
            session_id: self.id.clone(),
            turns: self.ledger.turns,
        });
    }
}

/// Time-ordered, unique enough for one machine.
fn session_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "s{:x}{:05x}",
        now.as_secs(),
        now.subsec_micros() ^ std::process::id()
    )
}
