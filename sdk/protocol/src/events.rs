//! The kernel's event catalogue: every event the kernel publishes, with
//! its payload, in one place. The kernel can only publish a
//! [`KernelEvent`]; UIs and loggers parse one back
//! ([`KernelEvent::from_wire`]) and match on its variants instead of
//! comparing strings and probing JSON. The wire format (`event` and
//! `payload` in stream-json lines and in the WIT `event` record) is what
//! serde makes of the variant: the name below, and the fields as a JSON
//! object. Both are stable; a field may be added, never renamed or
//! removed. Events an extension emits itself keep the name it gave them
//! (`ext.<id>.<name>`) and are not in the catalogue.
//!
//! Fields that carry another documented structure (a message, a tool's
//! arguments, a stage's result) stay JSON [`Value`]s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::words::{CommandStatus, Decision, Level, LoopStage, StageOutcome, TurnResult};

/// Tokens spent, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

macro_rules! catalogue {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal {
            $( $(#[$fattr:meta])* $field:ident : $fty:ty ),* $(,)?
        },
    )*) => {
        /// One kind of kernel event (the name without the payload).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum EventKind {
            $($(#[$doc])* $variant,)*
        }

        impl EventKind {
            /// Every kind, in catalogue order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The name on the wire.
            pub const fn name(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// The kind of a wire name; `None` for an extension's own event.
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name {
                    $($name => Some(EventKind::$variant),)*
                    _ => None,
                }
            }
        }

        /// One kernel event with its payload.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "event", content = "payload")]
        #[non_exhaustive]
        pub enum KernelEvent {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant { $( $(#[$fattr])* $field: $fty, )* },
            )*
        }

        impl KernelEvent {
            pub const fn kind(&self) -> EventKind {
                match self {
                    $(KernelEvent::$variant { .. } => EventKind::$variant,)*
                }
            }
        }
    };
}

impl KernelEvent {
    /// The name on the wire.
    pub const fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The payload as it goes on the wire.
    pub fn payload(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => m.remove("payload").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// The kernel event a wire `(name, payload)` pair is: `None` for an
    /// extension's own event, `Some(Err)` for a kernel name whose payload
    /// does not fit (a kernel newer or older than the reader).
    pub fn from_wire(
        name: &str,
        payload: &Value,
    ) -> Option<Result<KernelEvent, serde_json::Error>> {
        EventKind::from_name(name)?;
        Some(Self::tagged(name, payload.clone()))
    }

    /// [`from_wire`](Self::from_wire) for a payload still in its JSON
    /// text, as the WIT `event` record carries it (parsed once, not
    /// copied).
    /// The agent path a child session's event carries in its payload
    /// (`main/reviewer`); `None` for the main session's own events. UIs
    /// use it to indent or fold a subagent's work.
    pub fn agent_path(payload: &str) -> Option<String> {
        // Cheap test first: most events are the main session's.
        if !payload.contains("\"agent\"") {
            return None;
        }
        let v: Value = serde_json::from_str(payload).ok()?;
        v.get("agent")?.as_str().map(str::to_string)
    }

    pub fn from_wire_text(
        name: &str,
        payload: &str,
    ) -> Option<Result<KernelEvent, serde_json::Error>> {
        EventKind::from_name(name)?;
        Some(serde_json::from_str(payload).and_then(|p| Self::tagged(name, p)))
    }

    /// The event named `name` with `payload`, through serde's tagging.
    fn tagged(name: &str, payload: Value) -> Result<KernelEvent, serde_json::Error> {
        let mut pair = serde_json::Map::with_capacity(2);
        pair.insert("event".into(), Value::String(name.into()));
        pair.insert("payload".into(), payload);
        serde_json::from_value(Value::Object(pair))
    }
}

catalogue! {
    /// A session started.
    SessionStart = "session.start" {
        session_id: String,
        provider: String,
        model: String,
        /// The security mode (`ask`, `allowlist`, `yolo`).
        mode: String,
        tools: Vec<String>,
        /// The extension set chosen for the session (`--profile`,
        /// `--tools`, `--disable`), in words; absent when every installed
        /// extension is used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extension_set: Option<String>,
        /// The model's context window in tokens, when the provider says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    /// A session was read back from its store.
    SessionResumed = "session.resumed" {
        session_id: String,
        messages: u64,
        /// Tool calls without a result, answered as interrupted.
        repaired_tool_calls: u64,
        drift: Vec<String>,
        mode: String,
    },
    /// An extension changed or vanished since the session was saved.
    SessionDrift = "session.drift" { session_id: String, message: String },
    SessionEnd = "session.end" { session_id: String, turns: u64 },
    TurnStart = "turn.start" {
        turn_id: String,
        input: String,
        /// The workflow stage this turn executes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stage_id: Option<String>,
        /// The parallel stages this compound turn executes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stage_ids: Option<Vec<String>>,
        /// The stage that joins them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        join: Option<String>,
    },
    /// A turn ended.
    TurnEnd = "turn.end" {
        turn_id: String,
        status: TurnResult,
        /// Why it failed (empty unless `error`).
        code: String,
        message: String,
        iterations: u64,
        usage: Usage,
        session_usage: Usage,
        cost_usd: f64,
        session_cost_usd: f64,
    },
    /// A loop stage (receive-input ... render) begins.
    StagePre = "stage.pre" {
        stage: LoopStage,
        /// How many tool calls a `tool-call` stage runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        calls: Option<u64>,
    },
    StagePost = "stage.post" {
        stage: LoopStage,
        /// A `tool-call` stage stopped for a person's approval that a
        /// headless run cannot give.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        halted: bool,
    },
    /// A message joined a transcript (the session's, or a stage
    /// execution's when `execution_id` is set).
    MessageAppended = "message.appended" {
        role: String,
        content: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
    },
    MessagePersisted = "message.persisted" { session_id: String, index: u64, store: String },
    HistoryCleared = "history.cleared" { session_id: String },
    /// A turn changed files (its checkpoint can take them back: `/undo`).
    CheckpointRecorded = "checkpoint.recorded" {
        turn_id: String,
        changed: Vec<String>,
        /// Files the snapshot could not keep (too large), and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
    },
    /// `/undo` or `/rewind` put files back (or the conversation).
    CheckpointRestored = "checkpoint.restored" {
        what: String,
        restored: Vec<String>,
        /// Files changed since the turn, left as they were.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
        /// Messages the conversation was cut back to, when it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        history_len: Option<u64>,
    },
    /// The final text of a turn, as rendered.
    Render = "render" { text: String },
    ProviderRequestStarted = "provider.request.started" { provider: String, model: String, iteration: u64 },
    /// What a request sent to the provider was, as the SHA-256 of its
    /// canonical JSON form and that form's size: a replay checks it would
    /// send the same bytes. Once per request, retries aside.
    ProviderRequestSent = "provider.request.sent" {
        provider: String,
        model: String,
        iteration: u64,
        sha256: String,
        bytes: u64,
    },
    ProviderRequestCompleted = "provider.request.completed" {
        provider: String,
        model: String,
        finish: String,
        text: String,
        tool_calls: u64,
        duration_ms: u64,
    },
    ProviderRequestFailed = "provider.request.failed" {
        provider: String,
        model: String,
        class: String,
        code: String,
        message: String,
        /// What was streamed before the failure.
        partial_text: String,
    },
    ProviderRetry = "provider.retry" {
        provider: String,
        model: String,
        attempt: u64,
        max_retries: u64,
        delay_ms: u64,
        code: String,
        message: String,
    },
    /// A text delta.
    ProviderTokens = "provider.tokens" { delta: String },
    /// A thinking delta.
    ProviderReasoning = "provider.reasoning" { delta: String },
    ProviderToolCallStart = "provider.tool_call.start" { index: u64, id: String, name: String },
    ProviderToolCallDelta = "provider.tool_call.delta" { index: u64, delta: String },
    ProviderToolCallEnd = "provider.tool_call.end" { index: u64 },
    ProviderUsage = "provider.usage" {
        #[serde(flatten)]
        usage: Usage,
    },
    ProviderFinish = "provider.finish" { reason: String },
    ProviderCapabilityMissing = "provider.capability.missing" {
        provider: String,
        model: String,
        capability: String,
        message: String,
    },
    ModelChanged = "model.changed" { provider: String, from: String, to: String },
    /// `/provider`: another provider (and its model) serves the next turn.
    ProviderChanged = "provider.changed" { from: String, to: String, model: String },
    ToolProposed = "tool.proposed" { call_id: String, tool: String, arguments: Value },
    ToolStarted = "tool.started" { call_id: String, tool: String },
    /// A running tool reported progress (what it sent, as `progress`).
    ToolProgress = "tool.progress" { call_id: String, extension: String, progress: Value },
    ToolSucceeded = "tool.succeeded" {
        call_id: String,
        tool: String,
        /// The output's text, clipped for display.
        output: String,
        details: Option<Value>,
        duration_ms: u64,
    },
    ToolFailed = "tool.failed" {
        call_id: String,
        tool: String,
        class: String,
        code: String,
        message: String,
        /// Unset when the call was refused before it ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    ToolCancelled = "tool.cancelled" { call_id: String, tool: String, reason: String },
    /// A decision of the authority stack, with the layer that made it.
    ApprovalDecided = "approval.decided" {
        call_id: String,
        tool: String,
        key: String,
        /// Every layer a call reaches leaves one record, allows included.
        decision: Decision,
        /// `state-machine`, `mode`, `interaction`, `guard:<id>`.
        layer: String,
        reason: String,
        /// The mode that decided (mode layer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<String>,
        /// The state-machine layer's tuple, when it decided.
        #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
        stage: Option<StageAudit>,
    },
    InteractionRequested = "interaction.requested" {
        id: String,
        /// `{"ask": prompt}`, `{"confirm": prompt}`, `{"select": prompt,
        /// "options": [...]}` or `{"approve": tool, "key", "description"}`.
        kind: Value,
    },
    InteractionAnswered = "interaction.answered" { id: String, by: String, status: String },
    InteractionHalted = "interaction.halted" { id: String, reason: String },
    HookFired = "hook.fired" { slot: String, kind: String, extension: String, duration_us: u64 },
    HookFailed = "hook.failed" {
        slot: String,
        kind: String,
        extension: String,
        error: String,
        /// What became of the payload, for a transform: `withheld` (a
        /// failed transform stops its slot; the payload goes no further).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        payload: Option<String>,
    },
    HookDenied = "hook.denied" { slot: String, extension: String, code: String, reason: String },
    HookObserverDropped = "hook.observer.dropped" { extension: String, count: u64 },
    ContextFragment = "context.fragment" { extension: String, tokens: u64, iteration: u64 },
    ContextFailed = "context.failed" { extension: String, error: String },
    ContextWarning = "context.warning" { tokens: u64, window: u64, percent: f64 },
    ContextBlocked = "context.blocked" { extension: String, reason: String },
    ContextCompacted = "context.compacted" {
        /// 1 shortens old tool results, 2 summarizes, 3 drops the middle.
        tier: u8,
        removed: String,
        tokens_before: u64,
        tokens_after: u64,
        window: u64,
    },
    BudgetExceeded = "budget.exceeded" { spent_usd: f64, budget_usd: f64 },
    PersistenceFailed = "persistence.failed" {
        session_id: String,
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// The messages that were not written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        indexes: Option<Vec<u64>>,
    },
    ExtensionLog = "extension.log" { extension: String, level: Level, message: String },
    ExtensionEventsSuppressed = "extension.events.suppressed" { extension: String, count: u64, reason: String },
    ExtensionReloadRequested = "extension.reload.requested" { id: String, from: String, to: String },
    ExtensionReloaded = "extension.reloaded" {
        id: String,
        version: String,
        from: String,
        to: String,
        /// The stage boundary it was swapped in at.
        boundary: String,
    },
    ExtensionReloadRefused = "extension.reload.refused" { id: String, reason: String },
    /// What one extension cost during the turn that just ended (only
    /// extensions that were called): calls, CPU and host milliseconds,
    /// its peak memory so far, network bytes; for the provider, the
    /// turn's tokens and cost.
    ExtensionMetered = "extension.metered" {
        id: String,
        calls: u64,
        cpu_ms: f64,
        host_ms: f64,
        peak_memory_bytes: u64,
        net_bytes_sent: u64,
        net_bytes_received: u64,
        tokens: u64,
        cost_usd: f64,
    },
    ExtensionReloadFailed = "extension.reload.failed" { id: String, error: String, kept: String },
    /// A warning or error worth showing the person.
    Diagnostic = "diagnostic" { level: Level, message: String },
    /// A subscriber lost events (how many, coalesced).
    BusDropped = "bus.dropped" { subscriber: String, count: u64 },
    /// A UI or logger failed to take an event (it is not sent again).
    SubscriberFailed = "subscriber.failed" { extension: String, error: String },
    /// Text typed for the running turn reached it at a stage boundary (it
    /// is in the next request, as a user message).
    TurnSteered = "turn.steered" { text: String },
    /// The commands this session can run, for UIs that complete them.
    CommandsAvailable = "commands.available" { commands: Vec<CommandInfo> },
    /// A slash command is about to run (never part of a turn).
    CommandDispatched = "command.dispatched" {
        /// The name typed (an alias stays as typed).
        name: String,
        /// The command it resolved to.
        command: String,
        extension: String,
        arguments: String,
    },
    /// A slash command finished, failed or was refused.
    CommandResulted = "command.resulted" {
        command: String,
        extension: String,
        status: CommandStatus,
        /// What was shown to the person.
        message: String,
        duration_ms: u64,
    },
    /// A command asked the kernel for an action, and what came of it.
    CommandAction = "command.action" {
        extension: String,
        /// `switch-model`, `compact`, `network-allow`, ...
        action: String,
        ok: bool,
        message: String,
    },
    /// Entries the person added to the global allowlist from an approval
    /// (confirmed first); they apply from this call on.
    AllowlistAdded = "allowlist.added" { tool: String, entries: Vec<String>, file: String },
    /// An MCP server is connected (at session start, or `again` after it
    /// was lost); `tools` is how many of its tools it listed at start
    /// (none on a reconnection, where the offered list stays as it was).
    McpConnected = "mcp.connected" { server: String, transport: String, info: String, tools: Option<u64>, again: bool },
    /// An MCP server could not be started or reached (at start, or after
    /// every reconnection attempt failed).
    McpFailed = "mcp.failed" { server: String, error: String },
    /// The connection to an MCP server was found lost.
    McpDisconnected = "mcp.disconnected" { server: String, reason: String },
    /// An attempt to start a lost MCP server again, after `delay_ms`.
    McpReconnectAttempt = "mcp.reconnect_attempt" { server: String, attempt: u32, delay_ms: u64 },
    /// A server's tool list changed (it said so); the new list is offered
    /// from this stage boundary on.
    McpToolsChanged = "mcp.tools_changed" { server: String, added: Vec<String>, removed: Vec<String> },
    /// A resource named in the input (`@server:uri`) was read and
    /// attached, marked untrusted; `truncated` when it passed the bound.
    McpResourceAttached = "mcp.resource_attached" { server: String, uri: String, chars: u64, truncated: bool },
    /// A `task` call started a child session (`path`: `main/reviewer`).
    AgentStarted = "agent.started" {
        path: String,
        /// The agent definition's name.
        name: String,
        session_id: String,
        parent_session_id: String,
        call_id: String,
        description: String,
        tools: Vec<String>,
        mode: String,
        model: String,
    },
    /// A child session ended; its usage and cost are rolled up into the
    /// parent's. `status` is a turn status (`ok`, `error`, `cancelled`,
    /// `halted`); `code` says why it failed.
    AgentFinished = "agent.finished" {
        path: String,
        session_id: String,
        status: TurnResult,
        code: String,
        iterations: u64,
        usage: Usage,
        cost_usd: f64,
        duration_ms: u64,
    },
    /// A stage's completion tool was called with valid arguments.
    StageCompletion = "stage.completion" { call_id: String, tool: String, arguments: Value },
    WorkflowAttached = "workflow.attached" {
        state_machine: String,
        sha256: String,
        entry: String,
        stages: Vec<String>,
        /// Where a resumed workflow continues (its `next`).
        resumed_at: Option<Value>,
    },
    WorkflowStarted = "workflow.started" { state_machine: String, next: Value, resumed: bool },
    /// A stage execution's phase begins (setup ... exit).
    WorkflowPhasePre = "workflow.phase.pre" {
        #[serde(flatten)]
        at: PhaseAt,
    },
    WorkflowPhasePost = "workflow.phase.post" {
        #[serde(flatten)]
        at: PhaseAt,
    },
    /// A stage execution ended.
    WorkflowStageEnded = "workflow.stage.ended" {
        stage_id: String,
        execution_id: String,
        attempt: u64,
        outcome: StageOutcome,
        result: Value,
        compound_turn_id: Option<String>,
    },
    WorkflowSiblingFailed = "workflow.sibling.failed" {
        stage_id: String,
        compound_turn_id: String,
        message: String,
        join_ready: bool,
    },
    WorkflowFailed = "workflow.failed" { code: String, message: String },
    WorkflowFinished = "workflow.finished" {
        /// `ok`, or the status of the turn that ended it.
        status: TurnResult,
        /// Where it stopped, when it did not finish.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<Value>,
        /// Every stage's result, when it finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        results: Option<Value>,
    },
}

/// A command as a UI lists and completes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    pub description: String,
}

/// Which phase of which stage execution a `workflow.phase.*` event is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseAt {
    /// `setup`, `init`, `check-gate`, `act`, `assert` or `exit`.
    pub phase: String,
    pub stage_id: String,
    pub execution_id: String,
    pub attempt: u64,
    pub session_id: String,
    /// The compound turn of a parallel group (null for a lone stage).
    pub compound_turn_id: Option<String>,
}

/// What the state-machine layer decided on: the grant tuple.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageAudit {
    /// Why it denied (empty when it approved).
    pub code: String,
    pub state_machine: String,
    pub stage: String,
    pub stage_execution_id: String,
    pub attempt: u64,
    pub proposal_id: String,
    pub args_digest: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for k in EventKind::ALL {
            assert!(seen.insert(k.name()), "{} twice", k.name());
            assert_eq!(EventKind::from_name(k.name()), Some(*k));
        }
        assert_eq!(EventKind::from_name("ext.mine.thing"), None);
    }

    #[test]
    fn the_wire_is_the_name_and_the_fields() {
        let ev = KernelEvent::ToolStarted {
            call_id: "c1".into(),
            tool: "bash".into(),
        };
        assert_eq!(ev.name(), "tool.started");
        assert_eq!(ev.payload(), json!({"call_id": "c1", "tool": "bash"}));
        let back = KernelEvent::from_wire("tool.started", &ev.payload());
        assert_eq!(back.and_then(Result::ok), Some(ev));
    }

    #[test]
    fn optional_fields_are_absent_not_null() {
        let ev = KernelEvent::ToolFailed {
            call_id: "c".into(),
            tool: "t".into(),
            class: "ToolTerminal".into(),
            code: "denied".into(),
            message: "no".into(),
            duration_ms: None,
        };
        assert!(ev.payload().get("duration_ms").is_none());
    }

    #[test]
    fn a_state_machine_decision_is_flat_on_the_wire() {
        let ev = KernelEvent::ApprovalDecided {
            call_id: "c".into(),
            tool: "bash".into(),
            key: "ls".into(),
            decision: Decision::Approve,
            layer: "state-machine".into(),
            reason: "in the envelope".into(),
            mode: None,
            stage: Some(StageAudit {
                code: String::new(),
                state_machine: "sm".into(),
                stage: "build".into(),
                stage_execution_id: "x1".into(),
                attempt: 1,
                proposal_id: "c".into(),
                args_digest: "d".into(),
            }),
        };
        let p = ev.payload();
        assert_eq!(p["stage"], "build");
        assert_eq!(p["attempt"], 1);
        assert!(p.get("mode").is_none());
        let back = KernelEvent::from_wire("approval.decided", &p).and_then(Result::ok);
        assert_eq!(back, Some(ev));
    }

    #[test]
    fn the_wire_text_parses_like_the_value() {
        let text = r#"{"call_id":"c1","tool":"bash"}"#;
        let typed = KernelEvent::from_wire_text("tool.started", text).and_then(Result::ok);
        let valued = KernelEvent::from_wire("tool.started", &serde_json::from_str(text).unwrap())
            .and_then(Result::ok);
        assert!(typed.is_some());
        assert_eq!(typed, valued);
        assert!(matches!(
            KernelEvent::from_wire_text("tool.started", "{not json"),
            Some(Err(_))
        ));
        assert!(KernelEvent::from_wire_text("ext.x.y", "{}").is_none());
    }

    #[test]
    fn extension_events_and_misfits_are_told_apart() {
        assert!(KernelEvent::from_wire("ext.x.y", &json!({})).is_none());
        assert!(matches!(
            KernelEvent::from_wire("tool.started", &json!({"tool": 3})),
            Some(Err(_))
        ));
    }
}
