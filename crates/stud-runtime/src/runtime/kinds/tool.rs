use super::{guest_call, infallible};
use crate::digest::Sha256Digest;
use crate::runtime::contract::v0_1::stud::extension::tool_types::{
    CallContext, ToolOutput, ToolSpec,
};
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

/// Bumped when the note's shape changes.
const SPEC_NOTE_VERSION: &str = "tool-spec-v1";

/// A tool's spec and where it came from.
#[derive(Debug, Clone)]
pub struct KnownSpec {
    pub spec: ToolSpec,
    pub source: SpecSource,
}

/// Where a tool's spec came from, which decides what the kernel must
/// still check about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecSource {
    /// Recorded in this binary beside the bundled component it describes
    /// (its digest matched, its config is the default). The tests check
    /// every recorded spec against the component's `describe` and its
    /// parameter schema against the JSON Schema compiler
    /// (`tests/bundled_specs.rs`).
    Binary,
    /// The compile cache's note from an earlier `describe`.
    Cache,
    /// The component's `describe`, asked now.
    Described,
}

impl Extension {
    /// The tool's spec without starting it when this component, with this
    /// config, described itself before: `describe` may depend on nothing
    /// else (the contract says so), so the answer is kept beside the
    /// compiled code, authenticated like it. Otherwise it is asked, and
    /// kept.
    pub async fn tool_spec(&self) -> Result<KnownSpec, CallError> {
        if self.ctx.config == crate::runtime::load::NO_SETTINGS {
            let recorded = crate::bundled::recorded_tool_spec(&self.digest.hex());
            if let Some(spec) = recorded.and_then(|text| tool_spec_from_json(text.as_bytes())) {
                tracing::trace!(ext = %self.id(), "spec recorded in the binary");
                return Ok(KnownSpec {
                    spec,
                    source: SpecSource::Binary,
                });
            }
        }
        let name = format!(
            "{}-{}.{SPEC_NOTE_VERSION}.json",
            self.digest.hex(),
            &Sha256Digest::of(self.ctx.config.as_bytes()).hex()[..16]
        );
        let cache = &self.runtime().cache;
        if let Some(spec) = cache.read_note(&name).and_then(|b| tool_spec_from_json(&b)) {
            return Ok(KnownSpec {
                spec,
                source: SpecSource::Cache,
            });
        }
        let spec = self.tool_describe().await?;
        cache.write_note(&name, &tool_spec_to_json(&spec));
        Ok(KnownSpec {
            spec,
            source: SpecSource::Described,
        })
    }

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

/// A spec as the cache's notes and the recorded bundled specs hold it.
pub fn tool_spec_to_json(spec: &ToolSpec) -> Vec<u8> {
    serde_json::json!({
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "read_only": spec.read_only,
    })
    .to_string()
    .into_bytes()
}

/// The spec [`tool_spec_to_json`] wrote; `None` for anything else.
pub fn tool_spec_from_json(bytes: &[u8]) -> Option<ToolSpec> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    Some(ToolSpec {
        name: v["name"].as_str()?.to_string(),
        description: v["description"].as_str()?.to_string(),
        parameters: v["parameters"].as_str()?.to_string(),
        read_only: v["read_only"].as_bool()?,
    })
}
