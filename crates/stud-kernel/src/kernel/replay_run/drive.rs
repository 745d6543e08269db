//! Running a recording's prompts through a replay session, in order, with
//! the model changes and clears that happened between them, until the end
//! or until a branch stops.

use serde::Serialize;
use stud_protocol::replay_trace::TraceEntry;
use tokio_util::sync::CancellationToken;

use crate::kernel::replay::Divergence;
use crate::kernel::replay::compare::{by_turn, compare};
use crate::kernel::session::Session;

/// What happened between and as the prompts of a recording.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Model {
        provider: String,
        model: String,
    },
    Cleared,
    Options {
        max_cost_usd: Option<f64>,
        max_iterations: u32,
        tool_parallelism: u64,
    },
    Input(String),
}

/// The main session's steps of a recording.
pub fn steps(recorded: &[TraceEntry]) -> Vec<Step> {
    recorded
        .iter()
        .filter_map(|e| match e {
            TraceEntry::Model { provider, model } => Some(Step::Model {
                provider: provider.clone(),
                model: model.clone(),
            }),
            TraceEntry::Cleared => Some(Step::Cleared),
            TraceEntry::Options {
                max_cost_usd,
                max_iterations,
                tool_parallelism,
            } => Some(Step::Options {
                max_cost_usd: *max_cost_usd,
                max_iterations: *max_iterations,
                tool_parallelism: *tool_parallelism,
            }),
            TraceEntry::Input { text } => Some(Step::Input(text.clone())),
            _ => None,
        })
        .collect()
}

/// The provider and model the recording started on.
pub fn first_model(recorded: &[TraceEntry]) -> Option<(String, String)> {
    recorded.iter().find_map(|e| match e {
        TraceEntry::Model { provider, model } => Some((provider.clone(), model.clone())),
        _ => None,
    })
}

/// How a replay went.
#[derive(Debug, Clone, Serialize)]
pub struct Replayed {
    /// Prompts replayed, of those recorded.
    pub turns: u64,
    pub recorded_turns: u64,
    /// Requests that were byte for byte the recorded ones (each answered
    /// with its recorded response).
    pub requests: u64,
    /// Why it stopped before the end (a branch stopped, a provider switch
    /// a replay does not make).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub divergences: Vec<Divergence>,
}

/// Replay `recorded` through `session` (launched with its replayer).
pub async fn drive(session: &mut Session, recorded: &[TraceEntry]) -> Replayed {
    let steps = steps(recorded);
    let recorded_turns = steps.iter().filter(|s| matches!(s, Step::Input(_))).count() as u64;
    let Some(replay) = session.bus.replayer().cloned() else {
        return Replayed {
            turns: 0,
            recorded_turns,
            requests: 0,
            stopped: Some("this session is not a replay".into()),
            divergences: Vec::new(),
        };
    };
    let mut turns = 0;
    let mut stopped = None;
    for step in steps {
        match step {
            Step::Model { provider, model } => {
                if provider != session.roster.provider_id() {
                    stopped = Some(format!(
                        "before turn {}, the recording switched to provider `{provider}`; a replay keeps the provider it started on",
                        turns + 1
                    ));
                    break;
                }
                if model != session.roster.model
                    && let Err(e) = session.set_model(&model)
                {
                    stopped = Some(format!(
                        "before turn {}, the recording switched to model `{model}`: {e}",
                        turns + 1
                    ));
                    break;
                }
            }
            Step::Options {
                max_cost_usd,
                max_iterations,
                tool_parallelism,
            } => {
                session.config.max_cost_usd = max_cost_usd;
                session.ledger.set_max_cost(max_cost_usd);
                session.config.max_iterations = max_iterations;
                session.config.tool_parallelism = tool_parallelism.max(1) as usize;
            }
            Step::Cleared => {
                let id = session.id.clone();
                session.conversation.clear(&id);
            }
            Step::Input(text) => {
                turns += 1;
                replay.set_turn(turns);
                session.run_workflow(&text, &CancellationToken::new()).await;
                if replay.stopped() {
                    stopped = Some(format!(
                        "at turn {turns}, where the replay could not go on as recorded"
                    ));
                    break;
                }
            }
        }
    }
    let replayed = session.bus.trace().take();
    let mut divergences = replay.take_divergences();
    divergences.extend(compare(recorded, &replayed, stopped.is_none()));
    by_turn(&mut divergences);
    Replayed {
        turns,
        recorded_turns,
        requests: replay.served(),
        stopped,
        divergences,
    }
}
