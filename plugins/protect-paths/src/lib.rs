//! `protect-paths`: a guard at `tool-call.pre` that denies a call when any
//! path-like argument matches a protected glob (by default `.env` files and
//! private keys). Patterns match the whole path and its last component, as
//! written and as the file system will resolve it (so a link
//! `notes.txt -> .env` is protected like `.env`).

use glob::Pattern;
use stud_sdk::hook_payloads::{SlotPayload, ToolCallPre};
use stud_sdk::prelude::*;

const DEFAULT_PATTERNS: &[&str] = &[".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519"];
/// Argument names that carry paths in the bundled tools.
const PATH_KEYS: &[&str] = &["path", "file", "file_path", "paths", "files"];

#[derive(Default)]
struct ProtectPaths {
    patterns: Vec<Pattern>,
    /// Exact project paths the user lifted protection from
    /// (`protectedPaths.allow`, handed over by the kernel).
    allow: Vec<String>,
}

impl Hook for ProtectPaths {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let texts: Vec<String> = match config.get("patterns").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            None => DEFAULT_PATTERNS.iter().map(|s| s.to_string()).collect(),
        };
        self.patterns = texts
            .iter()
            .map(|t| {
                Pattern::new(t).map_err(|e| {
                    Error::validation(
                        "pattern-invalid",
                        format!("patterns: `{t}` is not a glob: {e}"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        self.allow = config
            .get("allow")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|a| a.trim_start_matches("./").to_string())
            .collect();
        Ok(())
    }

    fn run(&mut self, _slot: HookSlot, payload: Value) -> Result<HookOutcome, Error> {
        // A guard that cannot read the call cannot vouch for it.
        let Some(ToolCallPre { call }) = ToolCallPre::from_value(&payload) else {
            return Ok(HookOutcome::Deny(Error::validation(
                "payload-unreadable",
                "protect-paths could not read the call it was asked about (a `tool-call.pre` payload); the call was not run",
            )));
        };
        let tool = call.name.as_str();
        let Some(args) = call.arguments.as_object() else {
            return Ok(HookOutcome::Allow);
        };
        for key in PATH_KEYS {
            let values: Vec<&str> = match args.get(*key) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            for path in values {
                // A path that cannot be resolved (it leaves the project) is
                // refused by the tool itself; match it as written.
                let resolved = stud_sdk::fs::resolved_path(path).ok();
                if resolved.as_ref().is_some_and(|r| self.allow.contains(r)) {
                    continue;
                }
                let hit = self
                    .matching(path)
                    .or_else(|| resolved.as_deref().and_then(|r| self.matching(r)));
                if let Some(p) = hit {
                    let shown = match resolved.as_deref() {
                        Some(r) if r != path => format!("`{path}` (it leads to `{r}`)"),
                        _ => format!("`{path}`"),
                    };
                    return Ok(HookOutcome::Deny(Error::validation(
                        "path-protected",
                        format!(
                            "{tool}: {shown} matches the protected pattern `{p}`; ask the user to handle this file"
                        ),
                    )));
                }
            }
        }
        Ok(HookOutcome::Allow)
    }
}

impl ProtectPaths {
    fn matching(&self, path: &str) -> Option<&str> {
        let last = path.rsplit('/').next().unwrap_or(path);
        self.patterns
            .iter()
            .find(|p| p.matches(path) || p.matches(last))
            .map(Pattern::as_str)
    }
}

stud_sdk::export_hook!(ProtectPaths);
