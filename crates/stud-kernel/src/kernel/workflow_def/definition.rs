//! A state machine's stages, read once at attach and checked before any
//! stage runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::WorkflowError;
use crate::runtime::Extension;
use crate::runtime::domain::StageDefinition;

/// The tool whose valid call ends a stage's Act, with the schema its
/// arguments must match.
#[derive(Clone)]
pub struct Completion {
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub validator: std::sync::Arc<jsonschema::Validator>,
}

/// Attempts a stage gets when its definition names none (the spec leaves
/// it open): one retry, so a cap hit gets a second, fresh try.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;

/// One stage, checked.
pub struct StageDef {
    pub id: String,
    pub name: String,
    pub body: String,
    pub allowed: Option<BTreeSet<String>>,
    pub(crate) completion: Completion,
    pub turn_cap: u32,
    pub max_attempts: u32,
    pub backoff: Duration,
}

/// A state machine ready to run.
pub struct Workflow {
    pub sm: Arc<Extension>,
    pub stages: BTreeMap<String, StageDef>,
    pub entry: String,
}

impl Workflow {
    pub async fn load(sm: Arc<Extension>) -> Result<Workflow, WorkflowError> {
        let id = sm.id().to_string();
        let call = |e: crate::runtime::CallError| WorkflowError::Lifecycle {
            sm: id.clone(),
            phase: "load",
            detail: e.to_string(),
        };
        let defs = sm.sm_stages().await.map_err(call)?;
        let entry = sm.sm_entry_stage().await.map_err(call)?;
        let stages = check(&id, defs, &entry)?;
        Ok(Workflow { sm, stages, entry })
    }

    pub fn stage(&self, id: &str) -> Result<&StageDef, WorkflowError> {
        self.stages
            .get(id)
            .ok_or_else(|| WorkflowError::StageNotRegistered {
                sm: self.sm.id().to_string(),
                stage: id.to_string(),
            })
    }
}

fn check(
    sm: &str,
    defs: Vec<StageDefinition>,
    entry: &str,
) -> Result<BTreeMap<String, StageDef>, WorkflowError> {
    let invalid = |detail: String| WorkflowError::StageDefinitionInvalid {
        sm: sm.to_string(),
        detail,
    };
    if defs.is_empty() {
        return Err(invalid("it declares no stages".into()));
    }
    let mut stages = BTreeMap::new();
    for d in defs {
        if d.id.trim().is_empty() {
            return Err(invalid("a stage has an empty id".into()));
        }
        if d.turn_cap < 1 {
            return Err(WorkflowError::StageTurnCapTooLow {
                sm: sm.to_string(),
                stage: d.id,
            });
        }
        let schema: Value = serde_json::from_str(&d.completion_schema).map_err(|e| {
            WorkflowError::StageCompletionSchemaInvalid {
                sm: sm.to_string(),
                stage: d.id.clone(),
                detail: e.to_string(),
            }
        })?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            WorkflowError::StageCompletionSchemaInvalid {
                sm: sm.to_string(),
                stage: d.id.clone(),
                detail: e.to_string(),
            }
        })?;
        if d.completion_tool.trim().is_empty() {
            return Err(invalid(format!(
                "stage `{}` names no completion tool",
                d.id
            )));
        }
        let (max_attempts, backoff) = match d.retry_policy {
            Some(p) => (p.max_attempts.max(1), u64::from(p.backoff_ms)),
            None => (DEFAULT_MAX_ATTEMPTS, 0),
        };
        let def = StageDef {
            completion: Completion {
                name: d.completion_tool.clone(),
                description: format!(
                    "Call this when stage `{}` is done; its arguments are the stage's result.",
                    d.name
                ),
                schema,
                validator: Arc::new(validator),
            },
            id: d.id.clone(),
            name: d.name,
            body: d.body,
            allowed: d.allowed_tools.map(|t| t.into_iter().collect()),
            turn_cap: d.turn_cap,
            max_attempts,
            backoff: Duration::from_millis(backoff),
        };
        if stages.insert(d.id.clone(), def).is_some() {
            return Err(invalid(format!("two stages have the id `{}`", d.id)));
        }
    }
    if !stages.contains_key(entry) {
        return Err(invalid(format!(
            "its entry stage `{entry}` is not one of its stages ({})",
            stages.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(stages)
}
