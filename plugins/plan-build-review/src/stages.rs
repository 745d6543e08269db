//! The stage definitions: prompts, tool envelopes, completion schemas.

use stud_sdk::kinds::state_machine::{RetryPolicy, StageDefinition};
use stud_sdk::prelude::*;

pub const DISCOVERY: &str = "discovery";
pub const DECOMPOSE: &str = "decompose";
pub const BUILD_A: &str = "build_a";
pub const BUILD_B: &str = "build_b";
pub const REVIEW: &str = "review";
pub const COMPLETE: &str = "complete";

const READ: &[&str] = &["read", "list", "glob", "grep"];

fn tools(extra: &[&str]) -> Option<Vec<String>> {
    Some(READ.iter().chain(extra).map(|t| t.to_string()).collect())
}

fn stage(
    id: &str,
    name: &str,
    body: &str,
    allowed: Option<Vec<String>>,
    completion: (&str, Value),
    turn_cap: u32,
) -> StageDefinition {
    StageDefinition {
        id: id.into(),
        name: name.into(),
        body: format!("Workflow stage: {id}. {body}"),
        allowed_tools: allowed,
        completion_tool: completion.0.into(),
        completion_schema: completion.1.to_string(),
        turn_cap,
        retry_policy: Some(RetryPolicy {
            max_attempts: 2,
            backoff_ms: 0,
        }),
    }
}

fn unit_result() -> Value {
    json!({
        "type": "object",
        "required": ["unit", "green"],
        "properties": {"unit": {"type": "string"}, "green": {"type": "boolean"}, "notes": {"type": "string"}}
    })
}

pub fn all() -> Vec<StageDefinition> {
    let build = |id: &str| {
        stage(
            id,
            "Build a unit",
            "You build one unit of a plan, and only that unit. The task: {{ctx.input}}\nYour unit: {{ctx.unit}}\nMake the change with the file tools, check it (run the tests or the program with bash), then call `unit_done` with the unit's name and whether it is green.",
            tools(&["write", "edit", "multi-edit", "bash"]),
            ("unit_done", unit_result()),
            50,
        )
    };
    vec![
        stage(
            DISCOVERY,
            "Discovery",
            "Study the project before anything changes. The task: {{ctx.input}}\nRead what matters for it (layout, build and test commands, the code it touches) and call `report_findings` with what you found, one finding per entry.",
            tools(&[]),
            (
                "report_findings",
                json!({"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {"type": "string"}}}}),
            ),
            5,
        ),
        stage(
            DECOMPOSE,
            "Decompose",
            "Split the task into one or two independent units that can be built at the same time without touching the same files. The task: {{ctx.input}}\nFindings: {{ctx.results.discovery.findings}}\nCall `submit_plan` with the units (name and goal each).",
            tools(&["write", "edit"]),
            (
                "submit_plan",
                json!({"type": "object", "required": ["units"], "properties": {"units": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "object", "required": ["name", "goal"], "properties": {"name": {"type": "string"}, "goal": {"type": "string"}}}}}}),
            ),
            10,
        ),
        build(BUILD_A),
        build(BUILD_B),
        stage(
            REVIEW,
            "Review",
            "Review what the builders did. The task: {{ctx.input}}\nBuild results: {{ctx.siblings}}\nRead the changes; you may run `bash` once (the tests, say). Call `review_done` with whether the work is acceptable and why.",
            tools(&[]),
            (
                "review_done",
                json!({"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}, "notes": {"type": "string"}}}),
            ),
            10,
        ),
        stage(
            COMPLETE,
            "Complete",
            "Write the final report of this workflow. The task: {{ctx.input}}\nFindings: {{ctx.results.discovery.findings}}\nPlan: {{ctx.results.decompose}}\nBuilds: {{ctx.results.build_a}} {{ctx.results.build_b}}\nReview: {{ctx.results.review}}\nCall `finish` with the report.",
            Some(vec![]),
            (
                "finish",
                json!({
                    "type": "object",
                    "required": ["discoveryFindings", "buildResults", "decomposition"],
                    "properties": {
                        "discoveryFindings": {"type": "array", "items": {"type": "string"}},
                        "buildResults": {"type": "array", "items": {"type": "object", "required": ["unit", "green"], "properties": {"unit": {"type": "string"}, "green": {"type": "boolean"}}}},
                        "decomposition": {"type": "object", "required": ["units"], "properties": {"units": {"type": "array"}}}
                    }
                }),
            ),
            3,
        ),
    ]
}
