use super::{guest_call, infallible};
use crate::runtime::bindings::stud::extension::tool_types::{CallContext, ToolOutput, ToolSpec};
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn tool_describe(&self) -> Result<ToolSpec, CallError> {
        guest_call!(self, Tool, "describe", |g, store| infallible(
            g.call_describe(store).await
        ))
    }

    pub async fn tool_approval_key(&self, args: &str) -> Result<String, CallError> {
        let args = args.to_string();
        guest_call!(self, Tool, "approval-key", |g, store| g
            .call_approval_key(store, &args)
            .await)
    }

    /// Run the tool. `project_dir` in the context is filled in by the host.
    pub async fn tool_invoke(&self, call_id: &str, args: &str) -> Result<ToolOutput, CallError> {
        let ctx = CallContext {
            call_id: call_id.to_string(),
            project_dir: None,
        };
        let args = args.to_string();
        guest_call!(self, Tool, "invoke", |g, store| {
            let ctx = CallContext {
                project_dir: store.data().project_guest_dir(),
                ..ctx
            };
            store.data_mut().call_id = Some(ctx.call_id.clone());
            g.call_invoke(store, &ctx, &args).await
        })
    }
}
