//! Hook slots (a stage of the agent loop plus `pre`/`post`) and the slot
//! matrix: which hook kind may attach where. The matrix follows from what
//! each kind does: a guard vetoes a step, so it sits before steps that can
//! be refused; a transform rewrites data, so it cannot sit after a step
//! whose output is already gone (sent, streamed, shown); an observer only
//! watches, so it fits everywhere.

use std::fmt;
use std::str::FromStr;

use super::problems::quote;
use stud_protocol::text_enum;

/// A stage of one agent-loop iteration; `ALL` is in loop order. The same
/// words events carry (`stage.pre`), so it is the protocol's.
pub use stud_protocol::words::LoopStage as Stage;

text_enum! {
    /// Before or after a stage.
    pub enum Phase("phase") {
        Pre = "pre",
        Post = "post",
    }
}

text_enum! {
    /// What a hook does at its slot.
    pub enum HookKind("hook kind") {
        /// Allows or denies the step.
        Guard = "guard",
        /// Rewrites the step's data.
        Transform = "transform",
        /// Watches without changing anything.
        Observer = "observer",
    }
}

/// Where a hook attaches; text form `<stage>.<phase>`, e.g. `tool-call.pre`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct HookSlot {
    pub stage: Stage,
    pub phase: Phase,
}

/// Whether a hook kind may attach at a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotRule {
    Allowed,
    /// Allowed, but almost always a mistake (the caller warns): rewriting
    /// the wire request or the raw stream usually belongs one stage
    /// earlier.
    Rare,
    Forbidden,
}

/// The slot matrix.
pub fn slot_allows(slot: HookSlot, kind: HookKind) -> SlotRule {
    use Phase::{Post, Pre};
    use Stage::*;
    match (kind, slot.stage, slot.phase) {
        (HookKind::Observer, _, _) => SlotRule::Allowed,
        (HookKind::Transform, SendRequest | StreamResponse, Pre) => SlotRule::Rare,
        (HookKind::Transform, SendRequest | StreamResponse | Render, Post) => SlotRule::Forbidden,
        (HookKind::Transform, _, _) => SlotRule::Allowed,
        // Rendering only displays; vetoing it would hide what happened.
        (HookKind::Guard, Render, _) | (HookKind::Guard, _, Post) => SlotRule::Forbidden,
        (HookKind::Guard, _, Pre) => SlotRule::Allowed,
    }
}

/// The slots `kind` may use, in loop order, rare ones marked, for
/// "attach here instead" hints.
pub fn attach_points(kind: HookKind) -> String {
    let mut out = Vec::new();
    for slot in HookSlot::ALL {
        match slot_allows(slot, kind) {
            SlotRule::Allowed => out.push(slot.to_string()),
            SlotRule::Rare => out.push(format!("{slot} (rare)")),
            SlotRule::Forbidden => {}
        }
    }
    out.join(", ")
}

impl HookSlot {
    /// All 12 slots in loop order.
    pub const ALL: [HookSlot; 12] = {
        let mut out = [HookSlot {
            stage: Stage::ReceiveInput,
            phase: Phase::Pre,
        }; 12];
        let mut i = 0;
        while i < 12 {
            out[i] = HookSlot {
                stage: Stage::ALL[i / 2],
                phase: Phase::ALL[i % 2],
            };
            i += 1;
        }
        out
    };

    pub fn new(stage: Stage, phase: Phase) -> Self {
        Self { stage, phase }
    }
}

impl fmt::Display for HookSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.stage, self.phase)
    }
}

/// A slot text that is not `<stage>.<phase>`; the message spells out the
/// valid form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown slot {}; write <stage>.<phase> with stage one of {} and phase pre or post, e.g. slot = \"tool-call.pre\"",
    quote(.value),
    Stage::NAMES.join(", ")
)]
pub struct UnknownSlot {
    pub value: String,
}

impl FromStr for HookSlot {
    type Err = UnknownSlot;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownSlot {
            value: s.to_string(),
        };
        let (stage, phase) = s.split_once('.').ok_or_else(unknown)?;
        Ok(HookSlot {
            stage: stage.parse().map_err(|_| unknown())?,
            phase: phase.parse().map_err(|_| unknown())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(kind: HookKind, rule: SlotRule) -> usize {
        HookSlot::ALL
            .iter()
            .filter(|s| slot_allows(**s, kind) == rule)
            .count()
    }

    #[test]
    fn matrix_counts() {
        assert_eq!(count(HookKind::Observer, SlotRule::Allowed), 12);
        assert_eq!(count(HookKind::Transform, SlotRule::Allowed), 7);
        assert_eq!(count(HookKind::Transform, SlotRule::Rare), 2);
        assert_eq!(count(HookKind::Transform, SlotRule::Forbidden), 3);
        assert_eq!(count(HookKind::Guard, SlotRule::Allowed), 5);
        assert_eq!(count(HookKind::Guard, SlotRule::Rare), 0);
        assert_eq!(count(HookKind::Guard, SlotRule::Forbidden), 7);
    }

    #[test]
    fn matrix_cells() {
        let slot = |s: &str| s.parse::<HookSlot>().map_err(|e| e.to_string());
        assert_eq!(
            slot("render.post").map(|s| slot_allows(s, HookKind::Guard)),
            Ok(SlotRule::Forbidden)
        );
        assert_eq!(
            slot("render.pre").map(|s| slot_allows(s, HookKind::Guard)),
            Ok(SlotRule::Forbidden)
        );
        assert_eq!(
            slot("tool-call.pre").map(|s| slot_allows(s, HookKind::Guard)),
            Ok(SlotRule::Allowed)
        );
        assert_eq!(
            slot("send-request.pre").map(|s| slot_allows(s, HookKind::Transform)),
            Ok(SlotRule::Rare)
        );
        assert_eq!(
            slot("render.pre").map(|s| slot_allows(s, HookKind::Transform)),
            Ok(SlotRule::Allowed)
        );
        assert_eq!(
            slot("stream-response.post").map(|s| slot_allows(s, HookKind::Transform)),
            Ok(SlotRule::Forbidden)
        );
    }

    #[test]
    fn slot_text_round_trips_in_loop_order() {
        let texts: Vec<String> = HookSlot::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(texts[0], "receive-input.pre");
        assert_eq!(texts[11], "render.post");
        for slot in HookSlot::ALL {
            assert_eq!(slot.to_string().parse::<HookSlot>(), Ok(slot));
        }
        for bad in [
            "",
            "tool-call",
            "tool-call.",
            "tool.pre",
            "tool-call.during",
            "tool-call.pre.x",
            "Tool-Call.pre",
        ] {
            assert!(bad.parse::<HookSlot>().is_err(), "{bad}");
        }
    }

    #[test]
    fn guard_attach_points() {
        assert_eq!(
            attach_points(HookKind::Guard),
            "receive-input.pre, compose-request.pre, send-request.pre, stream-response.pre, tool-call.pre"
        );
    }
}
