//! A guard hook at `tool-call.pre`: refuses any tool call whose arguments
//! mention one of the blocked words (config `words`, default `password`).

use stud_sdk::prelude::*;

/// Blocked when the config names none.
const DEFAULT_WORDS: &[&str] = &["password"];

#[derive(Default)]
struct Guard {
    words: Vec<String>,
}

impl Hook for Guard {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.words = match config.get("words").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_lowercase)
                .collect(),
            None => DEFAULT_WORDS.iter().map(|w| w.to_string()).collect(),
        };
        Ok(())
    }

    fn run(&mut self, _slot: HookSlot, payload: Value) -> Result<HookOutcome, Error> {
        let call = payload.get("call").unwrap_or(&payload);
        let tool = call.get("name").and_then(Value::as_str).unwrap_or("?");
        let args = call
            .get("arguments")
            .map(Value::to_string)
            .unwrap_or_default()
            .to_lowercase();
        match self.words.iter().find(|w| args.contains(w.as_str())) {
            Some(word) => Ok(HookOutcome::Deny(Error::validation(
                "word-blocked",
                format!("{tool}: the arguments mention `{word}`, which this project blocks"),
            ))),
            None => Ok(HookOutcome::Allow),
        }
    }
}

stud_sdk::export_hook!(Guard);

#[cfg(test)]
mod tests {
    use super::*;

    fn slot() -> HookSlot {
        HookSlot {
            stage: Stage::ToolCall,
            phase: Phase::Pre,
        }
    }

    #[test]
    fn denies_a_call_that_mentions_a_blocked_word() {
        let mut guard = Guard::default();
        guard.init(&json!({})).expect("init");
        let call = json!({"call": {"name": "bash", "arguments": {"command": "echo $PASSWORD"}}});
        assert!(matches!(guard.run(slot(), call), Ok(HookOutcome::Deny(_))));
        let call = json!({"call": {"name": "bash", "arguments": {"command": "ls"}}});
        assert!(matches!(guard.run(slot(), call), Ok(HookOutcome::Allow)));
    }
}
