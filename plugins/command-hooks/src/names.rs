//! stud's tools as Claude Code names them, so a hook script written for
//! Claude Code reads `tool_name: "Bash"` and `tool_input.file_path`.

use stud_sdk::prelude::*;

/// Claude Code's name for stud's tool `name`.
pub fn claude_name(name: &str) -> String {
    match name {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "multi-edit" => "MultiEdit",
        "grep" => "Grep",
        "glob" => "Glob",
        "list" => "LS",
        "web-fetch" => "WebFetch",
        "task" => "Task",
        other => other,
    }
    .to_string()
}

/// stud's arguments as Claude Code's `tool_input` (`path` is `file_path`
/// for the file tools).
pub fn claude_input(tool: &str, args: &Value) -> Value {
    let mut v = args.clone();
    if file_tool(tool)
        && let Some(obj) = v.as_object_mut()
        && let Some(p) = obj.remove("path")
    {
        obj.insert("file_path".into(), p);
    }
    v
}

/// Claude Code's `updatedInput` as stud's arguments.
pub fn stud_input(tool: &str, input: &Value) -> Value {
    let mut v = input.clone();
    if file_tool(tool)
        && let Some(obj) = v.as_object_mut()
        && let Some(p) = obj.remove("file_path")
    {
        obj.insert("path".into(), p);
    }
    v
}

fn file_tool(tool: &str) -> bool {
    matches!(tool, "read" | "write" | "edit" | "multi-edit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_paths_go_both_ways() {
        let args = json!({"path": "a.txt", "content": "x"});
        let claude = claude_input("write", &args);
        assert_eq!(claude, json!({"file_path": "a.txt", "content": "x"}));
        assert_eq!(stud_input("write", &claude), args);
        assert_eq!(
            claude_input("bash", &json!({"command": "ls"})),
            json!({"command": "ls"})
        );
        assert_eq!(claude_name("list"), "LS");
    }
}
