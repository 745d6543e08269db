//! Hooks: guards, transforms and observers at the kernel's stage slots.

use serde_json::Value;

use crate::Error;
use crate::wit::stud::extension::types::HookSlot;

/// A hook. Which slots it runs at, and as which kind, is declared in
/// `extension.toml` (`[[hooks]]`); the kernel calls `run` at each.
pub trait Hook: Default + 'static {
    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// The extension is being retired: a reload replaced it, or the
    /// session ended. Release what `init` took; `dispose` follows. Bounded
    /// by the call deadline; an error is logged, not shown.
    fn deactivate(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The last call before the instance is dropped (after `deactivate`).
    fn dispose(&mut self) {}

    /// Decide at `slot`; return the outcome that matches the declared kind.
    fn run(&mut self, slot: HookSlot, payload: Value) -> Result<HookOutcome, Error>;
}

/// The text form of a slot, as manifests write it: `tool-call.pre`.
pub fn slot_text(slot: HookSlot) -> String {
    use crate::wit::stud::extension::types::{Phase, Stage};
    let stage = match slot.stage {
        Stage::ReceiveInput => "receive-input",
        Stage::ComposeRequest => "compose-request",
        Stage::SendRequest => "send-request",
        Stage::StreamResponse => "stream-response",
        Stage::ToolCall => "tool-call",
        Stage::Render => "render",
    };
    let phase = match slot.phase {
        Phase::Pre => "pre",
        Phase::Post => "post",
    };
    format!("{stage}.{phase}")
}

/// What a hook decided.
#[derive(Debug, Clone)]
pub enum HookOutcome {
    /// Guard: the stage may run.
    Allow,
    /// Guard: stop the stage, with the reason.
    Deny(Error),
    /// Transform: the new payload.
    Transform(Value),
    /// Observer: nothing changes.
    Observed,
}

/// Called by `export_hook!`; converts between WIT and SDK types.
#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::__private::{Instance, parse_json};
    use crate::wit::stud::extension::hook_types::HookOutcome as W;
    use crate::wit::stud::extension::types::ExtError;

    /// Parse the payload, run the hook and map its outcome to WIT.
    pub fn run<T: Hook>(
        inst: &Instance<T>,
        slot: HookSlot,
        payload: String,
    ) -> Result<W, ExtError> {
        let payload = parse_json(&payload)?;
        Ok(match inst.with(|h| h.run(slot, payload))? {
            HookOutcome::Allow => W::Allow,
            HookOutcome::Deny(e) => W::Deny(e.0),
            HookOutcome::Transform(v) => W::Transform(v.to_string()),
            HookOutcome::Observed => W::Observed,
        })
    }
}
