//! Running one admitted call, whoever provides the tool: a tool component
//! (cancelled through its instance) or an MCP server's tool (the request
//! is abandoned when the turn is cancelled). Both end as a [`Ran`].

use crate::kernel::act::ActParts;
use std::collections::BTreeSet;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::cancel::{call_error_code, cancellable};
use super::editor_tool::{self, EditorOp};
use crate::kernel::replay::replayer::outcome_of;
pub(crate) use crate::kernel::tool_outcome::{Delegated, Ran};
use crate::kernel::tools::ToolRunner;
use crate::mcp::tool::{McpOutcome, McpPart};
use crate::runtime::CallError;
use crate::runtime::domain::ToolOutput;
use crate::runtime::domain::{Image, ImageSource, ResultPart, ToolCall};
use stud_protocol::replay_trace::TraceEntry;

impl Ran {
    fn of_component(outcome: Option<Result<ToolOutput, CallError>>) -> Self {
        match outcome {
            None => Ran::Cancelled,
            Some(Ok(out)) => Ran::Ok(out),
            Some(Err(e)) => {
                let (class, code, message) = match &e {
                    CallError::Guest { error, .. } => (
                        format!("{:?}", error.class),
                        error.code.clone(),
                        error.message.clone(),
                    ),
                    other => (
                        "ToolTerminal".to_string(),
                        call_error_code(other).to_string(),
                        other.to_string(),
                    ),
                };
                Ran::Failed {
                    class,
                    code,
                    message,
                    detail: e.to_string(),
                }
            }
        }
    }

    fn of_mcp(server: &str, tool: &str, outcome: McpOutcome) -> Self {
        match outcome {
            McpOutcome::Ok(parts) => Ran::Ok(ToolOutput {
                content: parts
                    .into_iter()
                    .map(|p| match p {
                        McpPart::Text(t) => ResultPart::Text(t),
                        McpPart::Image { media_type, base64 } => ResultPart::Image(Image {
                            media_type,
                            source: ImageSource::Base64(base64),
                        }),
                    })
                    .collect(),
                // What a server says is not stud's to vouch for.
                details: Some(
                    json!({"mcp": {"server": server, "tool": tool, "untrusted": true}}).to_string(),
                ),
            }),
            McpOutcome::ToolError(text) => Ran::Failed {
                class: "ToolTerminal".into(),
                code: "mcp-tool-failed".into(),
                message: text.clone(),
                detail: format!("MCP server `{server}`: tool `{tool}` failed: {text}"),
            },
            McpOutcome::Failed(reason) => Ran::Failed {
                class: "ProviderTransient".into(),
                code: "mcp-connection-lost".into(),
                message: reason.clone(),
                detail: reason,
            },
        }
    }
}

impl ActParts<'_> {
    /// Run an admitted call. `envelope`: the tools of the stage it was
    /// made in (a `task` child never gets more). How it ended goes into
    /// the trace. In a replay, a call that may write or execute gets its
    /// recorded result instead of running (unless `--live-tools`).
    pub(crate) async fn run_admitted(
        &self,
        runner: &ToolRunner,
        call: &ToolCall,
        envelope: Option<&BTreeSet<String>>,
        cancel: &CancellationToken,
    ) -> Delegated {
        let agent = self.bus.agent_path();
        let delegated =
            match self.bus.replayer() {
                Some(replay) if !replay.live_tools && self.may_write(runner, &call.name) => {
                    Delegated::Ran(replay.result(agent, &call.id, &call.name).unwrap_or_else(
                        || Ran::Failed {
                            class: "ToolTerminal".into(),
                            code: "replay-no-result".into(),
                            message: "this call has no recorded result".into(),
                            detail: format!(
                                "replay: call {} ({}) has no recorded result",
                                call.id, call.name
                            ),
                        },
                    ))
                }
                _ => self.run_now(runner, call, envelope, cancel).await,
            };
        if let Delegated::Ran(ran) = &delegated {
            self.bus.trace().push(TraceEntry::ToolResult {
                agent: agent.map(str::to_string),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                outcome: outcome_of(ran),
            });
        }
        delegated
    }

    /// Whether running `tool` may change something outside the session:
    /// what is not known to only read is taken to write. A subagent and a
    /// skill run on (their own calls are judged one by one).
    fn may_write(&self, runner: &ToolRunner, tool: &str) -> bool {
        match runner {
            ToolRunner::Task | ToolRunner::Skill => false,
            ToolRunner::Component(_) | ToolRunner::Mcp(_) => !self
                .roster
                .tools
                .get(tool)
                .is_some_and(|e| e.spec.read_only),
        }
    }

    async fn run_now(
        &self,
        runner: &ToolRunner,
        call: &ToolCall,
        envelope: Option<&BTreeSet<String>>,
        cancel: &CancellationToken,
    ) -> Delegated {
        Delegated::Ran(match runner {
            ToolRunner::Component(ext) => match (&self.editor, EditorOp::of(ext)) {
                (Some(route), Some(op)) => tokio::select! {
                    ran = editor_tool::run(route, ext, op, &call.arguments) => ran,
                    _ = cancel.cancelled() => Ran::Cancelled,
                },
                _ => Ran::of_component(
                    cancellable(cancel, ext.tool_invoke(&call.id, &call.arguments)).await,
                ),
            },
            ToolRunner::Mcp(tool) => tokio::select! {
                out = tool.run(&call.arguments) => Ran::of_mcp(&tool.server, &tool.remote, out),
                _ = cancel.cancelled() => Ran::Cancelled,
            },
            ToolRunner::Task => return self.run_task(call, envelope, cancel).await,
            ToolRunner::Skill => {
                match crate::kernel::skills::run_skill(&self.config.skills, &call.arguments) {
                    Ok(text) => Ran::Ok(ToolOutput {
                        content: vec![crate::runtime::domain::ResultPart::Text(text)],
                        details: None,
                    }),
                    Err(message) => Ran::Failed {
                        class: "ToolTerminal".into(),
                        code: "skill".into(),
                        detail: format!("skill: {message}"),
                        message,
                    },
                }
            }
        })
    }
}
