//! The specs recorded beside the bundled tools (`plugins/<tool>/tool-spec.json`,
//! built into the binary so that a first start need not compile every tool
//! to learn what it offers the model) are exactly what each tool's
//! `describe` answers with the config it runs on by default, `{}`, and
//! their parameter schemas compile (the kernel compiles them only at a
//! tool's first call).
//! `UPDATE_GOLDEN=1` rewrites them from the components; build again after.

use std::path::Path;
use std::sync::Arc;

use crate::common;

use common::{Recorder, load_bundled};
use serde_json::Value;
use stud::kernel::tool_schema::ArgSchema;
use stud::manifest::Kind;
use stud::runtime::{tool_spec_from_json, tool_spec_to_json};

fn spec_file(dir: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins")
        .join(dir)
        .join("tool-spec.json")
}

#[tokio::test]
async fn recorded_tool_specs_are_what_the_tools_describe() {
    let project = tempfile::tempdir().unwrap();
    let exts = load_bundled(project.path(), Arc::new(Recorder::default())).await;
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut stale = Vec::new();
    let mut tools = 0;
    for bundled in stud::bundled::BUNDLED {
        let ext = exts
            .iter()
            .find(|e| e.digest.hex() == bundled.sha256)
            .unwrap_or_else(|| panic!("bundled {} was not loaded", bundled.dir));
        if ext.kind() != Kind::Tool {
            assert!(
                bundled.tool_spec.is_none() && !spec_file(bundled.dir).exists(),
                "plugins/{}/tool-spec.json belongs to a tool, and {} is a {}",
                bundled.dir,
                ext.id(),
                ext.kind().as_str()
            );
            continue;
        }
        tools += 1;
        let described = ext.tool_describe().await.unwrap();
        let answer: Value = serde_json::from_slice(&tool_spec_to_json(&described)).unwrap();
        if update {
            let text = serde_json::to_string_pretty(&answer).unwrap() + "\n";
            std::fs::write(spec_file(bundled.dir), text).unwrap();
            continue;
        }
        // What the binary holds, read the way the runtime reads it.
        let recorded = bundled
            .tool_spec
            .and_then(|text| tool_spec_from_json(text.as_bytes()))
            .map(|spec| serde_json::from_slice::<Value>(&tool_spec_to_json(&spec)).unwrap());
        // The kernel compiles a recorded spec's schema only at the tool's
        // first call (`ArgSchema::vouched`): this is what vouches for it.
        if let Some(spec) = bundled
            .tool_spec
            .and_then(|t| tool_spec_from_json(t.as_bytes()))
            && let Err(e) = ArgSchema::compile(&spec.parameters)
        {
            stale.push(format!("plugins/{}/tool-spec.json: {e}", bundled.dir));
        }
        if recorded.as_ref() != Some(&answer) {
            stale.push(format!(
                "plugins/{}/tool-spec.json: recorded {}, `describe` answers {answer}",
                bundled.dir,
                recorded.map_or("nothing".to_string(), |r| r.to_string())
            ));
        }
    }
    assert!(tools >= 10, "only {tools} bundled tools");
    assert!(
        stale.is_empty(),
        "{}\nrun `UPDATE_GOLDEN=1 cargo test --test e2e bundled_specs::`, then build again",
        stale.join("\n")
    );
}
