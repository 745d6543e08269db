//! A UI: a minimal line interface. It prints the answer as it streams and
//! each tool call, and reads prompts from the terminal.

use stud_sdk::events::KernelEvent;
use stud_sdk::host::terminal;
use stud_sdk::prelude::*;
use stud_sdk::terminal::safe;

#[derive(Default)]
struct Lines;

/// The text to show for `event`, if any. Model and tool text goes through
/// `safe`, so it cannot move the cursor or retitle the terminal.
fn shown(event: &KernelEvent) -> Option<String> {
    match event {
        KernelEvent::ProviderTokens { delta } => Some(safe(delta).into_owned()),
        KernelEvent::ToolProposed { tool, .. } => Some(format!("\n> {}\n", safe(tool))),
        KernelEvent::ToolFailed { code, message, .. } => {
            Some(format!("  ! {}: {}\n", safe(code), safe(message)))
        }
        _ => None,
    }
}

impl Ui for Lines {
    fn on_event(&mut self, event: Event) {
        if let Some(Ok(e)) = KernelEvent::from_wire_text(&event.name, &event.payload)
            && let Some(text) = shown(&e)
        {
            terminal::write(&text);
        }
    }

    fn read_input(&mut self) -> Option<String> {
        terminal::write("\n");
        terminal::read_line("> ")
    }
}

stud_sdk::export_ui!(Lines);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_text_is_made_inert() {
        let event = KernelEvent::ProviderTokens {
            delta: "hi\u{1b}]0;owned\u{7}".into(),
        };
        let text = shown(&event).expect("shown");
        assert!(text.starts_with("hi") && !text.contains('\u{1b}'));
    }
}
