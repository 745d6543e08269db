//! The kernel's event catalogue: every event the kernel publishes, in one
//! place. The kernel can only publish a name listed here; UIs and loggers
//! match on [`EventKind`] instead of comparing strings. The names are the
//! wire format (`event` in stream-json lines and in the WIT `event`
//! record) and are stable; payloads are documented in
//! `docs/hooks-and-events.md`. Events an extension emits itself keep the
//! name it gave them and have no kind here.

macro_rules! catalogue {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// One kind of kernel event.
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
    };
}

catalogue! {
    /// A session started (id, provider, model, mode, tools).
    SessionStart = "session.start",
    /// A session was read back from its store.
    SessionResumed = "session.resumed",
    /// An extension changed or vanished since the session was saved.
    SessionDrift = "session.drift",
    SessionEnd = "session.end",
    TurnStart = "turn.start",
    /// A turn ended: status, code, usage, cost.
    TurnEnd = "turn.end",
    /// A loop stage (receive-input ... render) begins.
    StagePre = "stage.pre",
    StagePost = "stage.post",
    MessageAppended = "message.appended",
    MessagePersisted = "message.persisted",
    HistoryCleared = "history.cleared",
    /// The final text of a turn, as rendered.
    Render = "render",
    ProviderRequestStarted = "provider.request.started",
    ProviderRequestCompleted = "provider.request.completed",
    ProviderRequestFailed = "provider.request.failed",
    ProviderRetry = "provider.retry",
    /// A text delta.
    ProviderTokens = "provider.tokens",
    /// A thinking delta.
    ProviderReasoning = "provider.reasoning",
    ProviderToolCallStart = "provider.tool_call.start",
    ProviderToolCallDelta = "provider.tool_call.delta",
    ProviderToolCallEnd = "provider.tool_call.end",
    ProviderUsage = "provider.usage",
    ProviderFinish = "provider.finish",
    ProviderCapabilityMissing = "provider.capability.missing",
    ModelChanged = "model.changed",
    ToolProposed = "tool.proposed",
    ToolStarted = "tool.started",
    ToolProgress = "tool.progress",
    ToolSucceeded = "tool.succeeded",
    ToolFailed = "tool.failed",
    ToolCancelled = "tool.cancelled",
    /// A decision of the authority stack, with the layer that made it.
    ApprovalDecided = "approval.decided",
    InteractionRequested = "interaction.requested",
    InteractionAnswered = "interaction.answered",
    InteractionHalted = "interaction.halted",
    HookFired = "hook.fired",
    HookFailed = "hook.failed",
    HookDenied = "hook.denied",
    HookObserverDropped = "hook.observer.dropped",
    ContextFragment = "context.fragment",
    ContextFailed = "context.failed",
    ContextWarning = "context.warning",
    ContextBlocked = "context.blocked",
    ContextCompacted = "context.compacted",
    BudgetExceeded = "budget.exceeded",
    PersistenceFailed = "persistence.failed",
    ExtensionLog = "extension.log",
    ExtensionEventsSuppressed = "extension.events.suppressed",
    ExtensionReloadRequested = "extension.reload.requested",
    ExtensionReloaded = "extension.reloaded",
    ExtensionReloadRefused = "extension.reload.refused",
    ExtensionReloadFailed = "extension.reload.failed",
    /// A warning or error worth showing the person.
    Diagnostic = "diagnostic",
    /// A subscriber lost events (how many, coalesced).
    BusDropped = "bus.dropped",
    /// A UI or logger failed to take an event (it is not sent again).
    SubscriberFailed = "subscriber.failed",
    /// A stage's completion tool was called with valid arguments.
    StageCompletion = "stage.completion",
    WorkflowAttached = "workflow.attached",
    WorkflowStarted = "workflow.started",
    /// A stage execution's phase begins (setup ... exit).
    WorkflowPhasePre = "workflow.phase.pre",
    WorkflowPhasePost = "workflow.phase.post",
    /// A stage execution ended: outcome and result.
    WorkflowStageEnded = "workflow.stage.ended",
    WorkflowSiblingFailed = "workflow.sibling.failed",
    WorkflowFailed = "workflow.failed",
    WorkflowFinished = "workflow.finished",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for k in EventKind::ALL {
            assert!(seen.insert(k.name()), "{} twice", k.name());
            assert_eq!(EventKind::from_name(k.name()), Some(*k));
        }
        assert_eq!(EventKind::from_name("ext.mine.thing"), None);
    }
}
