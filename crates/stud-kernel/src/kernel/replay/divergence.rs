//! What a replay found different from the recording, as the report lists
//! it (`--json` gives the same entries as objects).

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// One layer's decision on a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub layer: String,
    pub decision: String,
    pub reason: String,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} by {}", self.decision, self.layer)?;
        if !self.reason.is_empty() {
            write!(f, " ({})", one_line(&self.reason))?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Divergence {
    /// No recorded response answers this request: what was sent differs
    /// (a context provider, a transform, a changed tool). The branch stops
    /// here rather than guess.
    Request {
        turn: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// The agent's request number in the session (1-based).
        request: u64,
        /// The parts that differ from the request recorded there.
        parts: Vec<String>,
    },
    /// The authority stack decided a call differently.
    Decision {
        turn: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        call_id: String,
        tool: String,
        key: String,
        recorded: Vec<Step>,
        replayed: Vec<Step>,
    },
    /// A tool that ran again gave another result.
    ToolResult {
        turn: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        call_id: String,
        tool: String,
        recorded: String,
        replayed: String,
    },
    /// A call that writes or executes runs now but did not in the
    /// recording, so there is no result to give it (`--live-tools` runs
    /// it). The branch stops.
    NoRecordedResult {
        turn: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        call_id: String,
        tool: String,
    },
    /// The replay asked a question the recording never asked; it was
    /// refused.
    Question {
        turn: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        question: Value,
    },
    /// The workflow took another path: at `position` (0-based) of the
    /// stage executions, another stage or outcome.
    Workflow {
        turn: u64,
        position: u64,
        recorded: Option<String>,
        replayed: Option<String>,
    },
}

impl Divergence {
    /// Whether the replay of the session stops at it.
    pub fn stops_branch(&self) -> bool {
        matches!(
            self,
            Divergence::Request { .. } | Divergence::NoRecordedResult { .. }
        )
    }
}

/// A key or reason on one line of the report.
fn one_line(s: &str) -> String {
    s.lines().collect::<Vec<_>>().join("; ")
}

fn who(agent: &Option<String>) -> String {
    agent
        .as_deref()
        .map(|a| format!(" (subagent {a})"))
        .unwrap_or_default()
}

fn steps(s: &[Step]) -> String {
    if s.is_empty() {
        return "no decision".into();
    }
    s.iter()
        .map(Step::to_string)
        .collect::<Vec<_>>()
        .join(", then ")
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Divergence::Request {
                turn,
                agent,
                request,
                parts,
            } => {
                let what = if parts.is_empty() {
                    "it was not recorded".to_string()
                } else {
                    format!("{} differ", parts.join(", "))
                };
                write!(
                    f,
                    "turn {turn}{}: request {request} is not the one recorded ({what}); the recorded responses no longer fit, so the replay of this branch stops here",
                    who(agent)
                )
            }
            Divergence::Decision {
                turn,
                agent,
                call_id,
                tool,
                key,
                recorded,
                replayed,
            } => {
                // The layers both agree on first are left out of the line
                // (`--json` has them all).
                let same = recorded
                    .iter()
                    .zip(replayed)
                    .take_while(|(a, b)| a == b)
                    .count();
                write!(
                    f,
                    "turn {turn}{}: call {call_id} ({tool} `{}`) decided differently: recorded {}; now {}",
                    who(agent),
                    one_line(key),
                    steps(&recorded[same..]),
                    steps(&replayed[same..])
                )
            }
            Divergence::ToolResult {
                turn,
                agent,
                call_id,
                tool,
                recorded,
                replayed,
            } => write!(
                f,
                "turn {turn}{}: call {call_id} ({tool}) gave another result: recorded {recorded:?}; now {replayed:?}",
                who(agent)
            ),
            Divergence::NoRecordedResult {
                turn,
                agent,
                call_id,
                tool,
            } => write!(
                f,
                "turn {turn}{}: call {call_id} ({tool}) runs now but did not in the recording, so it has no recorded result (re-run with --live-tools to run it in a throwaway copy); the replay of this branch stops here",
                who(agent)
            ),
            Divergence::Question {
                turn,
                agent,
                question,
            } => write!(
                f,
                "turn {turn}{}: asked {question}, which the recording never asked; refused",
                who(agent)
            ),
            Divergence::Workflow {
                turn,
                position,
                recorded,
                replayed,
            } => write!(
                f,
                "turn {turn}: the workflow took another path at stage execution {}: recorded {}; now {}",
                position + 1,
                recorded.as_deref().unwrap_or("nothing"),
                replayed.as_deref().unwrap_or("nothing")
            ),
        }
    }
}
