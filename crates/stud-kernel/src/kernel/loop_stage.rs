//! A loop stage as events name it: the manifest's `Stage` (what hooks
//! attach to) and the protocol's `LoopStage` (what UIs read) are the same
//! six words, kept in two crates that do not depend on each other.

use crate::manifest::Stage;
use stud_protocol::words::LoopStage;

pub fn loop_stage(stage: Stage) -> LoopStage {
    match stage {
        Stage::ReceiveInput => LoopStage::ReceiveInput,
        Stage::ComposeRequest => LoopStage::ComposeRequest,
        Stage::SendRequest => LoopStage::SendRequest,
        Stage::StreamResponse => LoopStage::StreamResponse,
        Stage::ToolCall => LoopStage::ToolCall,
        Stage::Render => LoopStage::Render,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stage_keeps_its_word() {
        for stage in Stage::ALL {
            assert_eq!(loop_stage(stage).as_str(), stage.to_string());
        }
    }
}
