//! `stud mcp serve`: the session's tools offered to another MCP client
//! (an IDE, another agent) over stdio. The client borrows stud's tools, not
//! its authority: every call goes through the authority stack of a session
//! opened for that client, exactly as a model's call would (the stage and
//! mode gates, protect-paths and every guard, `tool-call.pre` transforms,
//! the audit trail). A call the mode wants a person to approve is refused
//! with `approval-required`: the client's say-so never approves anything,
//! and stdio leaves no terminal to ask on.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt as _};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::kernel::Launched;
use crate::kernel::turn_status::{TurnOutcome, TurnStatus};
use crate::runtime::domain::{ResultPart, ToolCall, ToolResult};

/// Why serving stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP client could not be served over stdio: {0}")]
    Start(String),
    #[error(
        "`stud mcp serve --http` serves on a loopback address only (127.0.0.1 or ::1), not {0}; a tunnel or proxy can carry it further"
    )]
    NotLoopback(std::net::SocketAddr),
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        addr: std::net::SocketAddr,
        reason: std::io::Error,
    },
    #[error("serving the MCP client failed: {0}")]
    Serve(String),
}

/// Work for the session, and where its outcome goes.
pub(super) enum Job {
    Call(
        ToolCall,
        tokio::sync::oneshot::Sender<Result<ToolResult, TurnStatus>>,
    ),
    /// The `prompt` tool: a whole turn.
    Prompt(String, tokio::sync::oneshot::Sender<TurnOutcome>),
}

/// The name of the tool that runs a whole turn (`--prompt-tool`).
pub const PROMPT_TOOL: &str = "prompt";

/// The server's side: the tools, and the way to the session. The session
/// runs on the task that serves (its calls are not `Send`: a `task` call
/// runs a child session); the handler hands it calls one at a time.
#[derive(Clone)]
pub(super) struct StudServer {
    tools: Arc<Vec<Tool>>,
    calls: tokio::sync::mpsc::Sender<Job>,
    prompt_tool: bool,
}

/// The session's tools as MCP tools, their schemas as they are, and the
/// `prompt` tool when asked for.
fn mcp_tools(launched: &Launched, prompt_tool: bool) -> Vec<Tool> {
    let mut tools = session_tools(launched);
    if prompt_tool {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "What to ask stud's model."}},
            "required": ["prompt"],
            "additionalProperties": false
        });
        let serde_json::Value::Object(schema) = schema else {
            return tools;
        };
        tools.push(Tool::new(
            PROMPT_TOOL,
            "Run a whole stud turn in this folder: stud's model works with stud's tools (each call through stud's authority stack) and its final answer comes back.",
            schema,
        ));
    }
    tools
}

fn session_tools(launched: &Launched) -> Vec<Tool> {
    launched
        .session
        .offered_tool_specs()
        .into_iter()
        .filter_map(|spec| {
            let schema: serde_json::Map<String, Value> =
                serde_json::from_str(&spec.parameters).ok()?;
            let mut tool = Tool::new(spec.name, spec.description, schema);
            let mut hints = ToolAnnotations::default();
            hints.read_only_hint = Some(spec.read_only);
            tool.annotations = Some(hints);
            Some(tool)
        })
        .collect()
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A tool's result as MCP content: text as text, images as images.
fn to_mcp(result: ToolResult) -> CallToolResult {
    let content = result
        .content
        .into_iter()
        .map(|p| match p {
            ResultPart::Text(t) => ContentBlock::text(t),
            ResultPart::Image(i) => match i.source {
                crate::runtime::domain::ImageSource::Base64(data) => {
                    ContentBlock::image(data, i.media_type)
                }
                crate::runtime::domain::ImageSource::Url(url) => {
                    ContentBlock::text(format!("[image: {url}]"))
                }
            },
        })
        .collect();
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl ServerHandler for StudServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("stud", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "stud's sandboxed tools. Every call passes stud's authority stack; one that needs a person's approval is refused with approval-required.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: self.tools.as_ref().clone(),
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let arguments = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Default::default()));
        let call = ToolCall {
            id: format!("mcp-client-{n}"),
            name: request.name.to_string(),
            arguments: arguments.to_string(),
        };
        let gone = || ErrorData::internal_error("the stud session has ended", None);
        if self.prompt_tool && call.name == PROMPT_TOOL {
            let Some(prompt) = arguments
                .get("prompt")
                .and_then(Value::as_str)
                .filter(|p| !p.trim().is_empty())
            else {
                return Ok(
                    text_result("`prompt` needs a non-empty `prompt` string".into(), true).into(),
                );
            };
            let (reply, outcome) = tokio::sync::oneshot::channel();
            self.calls
                .send(Job::Prompt(prompt.to_string(), reply))
                .await
                .map_err(|_| gone())?;
            let outcome = outcome.await.map_err(|_| gone())?;
            let result = match outcome.status {
                TurnStatus::Completed => text_result(outcome.text, false),
                TurnStatus::Halted { tool, key } => text_result(
                    format!(
                        "approval-required: the turn stopped at `{tool}` ({key}), which needs a person's approval in this session's mode"
                    ),
                    true,
                ),
                TurnStatus::Failed { code, message } => {
                    text_result(format!("the turn failed ({code}): {message}"), true)
                }
                other => text_result(format!("the turn ended: {other:?}"), true),
            };
            return Ok(result.into());
        }
        let (reply, outcome) = tokio::sync::oneshot::channel();
        self.calls
            .send(Job::Call(call, reply))
            .await
            .map_err(|_| gone())?;
        let result = match outcome.await.map_err(|_| gone())? {
            Ok(result) => to_mcp(result),
            Err(TurnStatus::Halted { tool, key }) => text_result(
                format!(
                    "approval-required: `{tool}` ({key}) needs a person's approval in this session's mode, and an MCP client cannot give it; run `stud mcp serve` with an allowlist entry for it (--allow) or in a mode that allows it"
                ),
                true,
            ),
            Err(other) => text_result(format!("the call did not run: {other:?}"), true),
        };
        Ok(result.into())
    }
}

/// Serve `launched`'s tools on stdin/stdout until the client closes its
/// side; the session is handed back (to be shut down by the caller).
pub async fn serve_stdio(launched: Launched, prompt_tool: bool) -> Result<Launched, ServeError> {
    let (server, launched, jobs) = prepare(launched, prompt_tool);
    let running = server
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    let ended = async move {
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeError::Serve(e.to_string()))
    };
    run_jobs(launched, jobs, ended).await
}

/// The handler for `launched`'s tools, and the queue its calls arrive on.
pub(super) fn prepare(
    launched: Launched,
    prompt_tool: bool,
) -> (StudServer, Launched, tokio::sync::mpsc::Receiver<Job>) {
    // No provider request is coming: loggers and observers start now, so
    // the session's record holds the client's calls as they happen.
    launched.session.first_request.open();
    let (calls, jobs) = tokio::sync::mpsc::channel::<Job>(16);
    // A session tool that has the name keeps it.
    let prompt_tool = prompt_tool
        && !launched
            .session
            .offered_tool_specs()
            .iter()
            .any(|t| t.name == PROMPT_TOOL);
    let tools = mcp_tools(&launched, prompt_tool);
    let server = StudServer {
        tools: Arc::new(tools),
        calls,
        prompt_tool,
    };
    (server, launched, jobs)
}

/// Run the clients' calls on the session, one at a time, until `ended`.
pub(super) async fn run_jobs(
    mut launched: Launched,
    mut jobs: tokio::sync::mpsc::Receiver<Job>,
    ended: impl std::future::Future<Output = Result<(), ServeError>>,
) -> Result<Launched, ServeError> {
    tokio::pin!(ended);
    let cancel = CancellationToken::new();
    loop {
        tokio::select! {
            r = &mut ended => {
                r?;
                return Ok(launched);
            }
            Some(job) = jobs.recv() => match job {
                Job::Call(call, reply) => {
                    let outcome = launched.session.call_tool(&call, &cancel).await;
                    let _ = reply.send(outcome);
                }
                Job::Prompt(prompt, reply) => {
                    let outcome = launched.session.run_workflow(&prompt, &cancel).await;
                    let _ = reply.send(outcome);
                }
            },
        }
    }
}
