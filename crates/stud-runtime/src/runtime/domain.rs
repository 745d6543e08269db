//! The kernel's names for what crosses the contract: messages and their
//! parts, requests and stream events, tool specs and outputs, questions,
//! terminal keys, state machine verdicts. Today they are contract 0.1's
//! types (see [`super::contract`]); the kernel and the front ends import
//! them from here only, so the next contract version changes this module
//! and the adapter beside it, not the loop.

pub use super::contract::v0_1::exports::stud::extension::ui_screen::UiAction;
pub use super::contract::v0_1::stud::extension::command_types::CommandArgs;
pub use super::contract::v0_1::stud::extension::context_provider_types::{
    ComposeContext, FragmentKind,
};
pub use super::contract::v0_1::stud::extension::hook_types::HookOutcome;
pub use super::contract::v0_1::stud::extension::interaction::{
    Approval, Choice, InteractionKind, InteractionRequest, InteractionResponse, InteractionStatus,
};
pub use super::contract::v0_1::stud::extension::provider_types::{
    FinishReason, ModelCapabilities, ModelInfo, Request, RequestParams, StreamEvent, ThinkingDelta,
    ThinkingLevel, ToolCallDelta, ToolCallStart, ToolDefinition,
};
pub use super::contract::v0_1::stud::extension::session::NetworkChange;
pub use super::contract::v0_1::stud::extension::session_store_types::SessionSummary;
pub use super::contract::v0_1::stud::extension::state_machine_types::{
    AssertOutcome, Execution, Gate, NextResult, StageDefinition, ToolProposal, ToolVerdict,
};
pub use super::contract::v0_1::stud::extension::terminal::{
    Color, Key, KeyCode, KeyModifiers, Modifiers,
};
pub use super::contract::v0_1::stud::extension::tool_types::{ToolOutput, ToolSpec};
pub use super::contract::v0_1::stud::extension::types::{
    ContentPart, Event, HookSlot, Image, ImageSource, Message, Phase, ResultPart, Role, Stage,
    Thinking, ToolCall, ToolResult, Usage,
};
