//! `stage-counter`: an observer at every slot. It counts firings per slot in
//! its state slot (so counts survive traps and reloads) and emits the counts
//! as `ext.stage-counter.counts` after each turn's render.

use std::collections::BTreeMap;

use stud_sdk::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Counts {
    counts: BTreeMap<String, u64>,
}

#[derive(Default)]
struct StageCounter;

impl Hook for StageCounter {
    fn run(&mut self, slot: HookSlot, _payload: Value) -> Result<HookOutcome, Error> {
        let mut state: Counts = host::state::read()?.unwrap_or_default();
        let name = slot_text(slot);
        *state.counts.entry(name.clone()).or_default() += 1;
        host::state::write(&state)?;
        if name == "render.post" {
            host::emit("counts", &state.counts)?;
        }
        Ok(HookOutcome::Observed)
    }
}

stud_sdk::export_hook!(StageCounter);
