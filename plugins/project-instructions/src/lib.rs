//! `project-instructions`: the first of `AGENTS.md`, `STUD.md` (or the
//! configured names) found in the project root becomes a system-message
//! fragment, so the model follows the project's own rules.

use stud_sdk::prelude::*;

const DEFAULT_FILES: [&str; 2] = ["AGENTS.md", "STUD.md"];

#[derive(Default)]
struct Instructions {
    files: Vec<String>,
    budget: u32,
}

impl ContextProvider for Instructions {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.files = config["files"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_else(|| DEFAULT_FILES.iter().map(|f| f.to_string()).collect());
        self.budget = config["tokenBudget"].as_u64().unwrap_or(8000) as u32;
        Ok(())
    }

    fn provide(&mut self, ctx: ComposeContext) -> Result<Vec<Fragment>, Error> {
        let Some(root) = ctx.project_dir else {
            return Ok(Vec::new());
        };
        for name in &self.files {
            let path = format!("{root}/{name}");
            // A FIFO or device named AGENTS.md is refused, not opened.
            if let Some(text) = stud_sdk::fs::read_to_string(&path, name)?
                && !text.trim().is_empty()
            {
                return Ok(vec![Fragment {
                    kind: FragmentKind::SystemMessage,
                    content: format!("Project instructions ({name}):\n{}", text.trim()),
                    priority: 100,
                    token_budget: self.budget,
                }]);
            }
        }
        Ok(Vec::new())
    }
}

stud_sdk::export_context_provider!(Instructions);
