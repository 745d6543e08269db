//! The `skill` tool: the kernel answers it from the skill catalogue (the
//! skills live outside any component's grant). Without `file` it returns
//! the skill's instructions and lists its files; with `file`, that file.

use serde_json::{Value, json};

use super::{SkillCatalog, resources};
use crate::runtime::domain::ToolSpec;

pub const SKILL_TOOL: &str = "skill";

pub fn skill_spec(catalog: &SkillCatalog) -> ToolSpec {
    let names: Vec<&str> = catalog.all().map(|s| s.name.as_str()).collect();
    let parameters = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": names, "description": "The skill, as the system prompt lists it."},
            "file": {"type": "string", "description": "A file of the skill to read (as the skill lists them, e.g. `references/api.md`); leave out to load the skill's instructions."}
        },
        "required": ["name"],
        "additionalProperties": false
    });
    ToolSpec {
        name: SKILL_TOOL.into(),
        description: "Load a skill listed in the system prompt: its instructions, then any of its files you need. Run a skill's scripts with the shell tool from the folder it names.".into(),
        parameters: parameters.to_string(),
        // It reads the person's installed instructions; running what they
        // say passes the authority stack call by call.
        read_only: true,
    }
}

/// The approval key of a call: the skill, and the file when one is asked.
pub fn skill_key(arguments: &str) -> String {
    let v: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let name = v.get("name").and_then(Value::as_str).unwrap_or("");
    match v.get("file").and_then(Value::as_str) {
        Some(f) => format!("{name}/{f}"),
        None => name.to_string(),
    }
}

/// What the call returns, or why not.
pub fn run(catalog: &SkillCatalog, arguments: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(arguments).map_err(|e| e.to_string())?;
    let name = v.get("name").and_then(Value::as_str).unwrap_or("");
    let skill = catalog.get(name).ok_or_else(|| {
        let names: Vec<&str> = catalog.all().map(|s| s.name.as_str()).collect();
        format!("no skill `{name}`; the skills are: {}", names.join(", "))
    })?;
    if let Some(file) = v.get("file").and_then(Value::as_str) {
        return resources::read(&skill.folder, file);
    }
    let body = skill.body().map_err(|e| format!("skill `{name}`: {e}"))?;
    let files = resources::list(&skill.folder);
    let mut out = format!(
        "<skill name=\"{name}\" folder=\"{}\">\n{}\n</skill>",
        skill.folder.display(),
        body.replace("</skill", "<\\/skill")
    );
    if !files.is_empty() {
        out.push_str(&format!(
            "\n\nFiles of this skill (read one with `{SKILL_TOOL}` and `file`; run a script with the shell from the folder above):\n{}",
            files.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(out)
}
