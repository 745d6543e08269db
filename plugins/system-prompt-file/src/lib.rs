//! `system-prompt-file`: the file named by config `path` (relative to the
//! project root) becomes a system-message fragment. Without `path` it adds
//! nothing; a configured file that is missing is an error naming it.

use stud_sdk::prelude::*;

#[derive(Default)]
struct PromptFile {
    path: Option<String>,
    budget: u32,
}

impl ContextProvider for PromptFile {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.path = config["path"].as_str().map(str::to_string);
        self.budget = config["tokenBudget"].as_u64().unwrap_or(4000) as u32;
        Ok(())
    }

    fn provide(&mut self, ctx: ComposeContext) -> Result<Vec<Fragment>, Error> {
        let (Some(rel), Some(root)) = (&self.path, ctx.project_dir) else {
            return Ok(Vec::new());
        };
        if rel.split('/').any(|p| p == "..") || rel.starts_with('/') {
            return Err(Error::validation(
                "config-invalid",
                format!("`path` = `{rel}` must stay inside the project"),
            ));
        }
        let text =
            stud_sdk::fs::read_to_string(&format!("{root}/{rel}"), rel)?.ok_or_else(|| {
                Error::io(
                    rel,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
                )
            })?;
        Ok(vec![Fragment {
            kind: FragmentKind::SystemMessage,
            content: text.trim().to_string(),
            priority: 200,
            token_budget: self.budget,
        }])
    }
}

stud_sdk::export_context_provider!(PromptFile);
