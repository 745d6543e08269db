//! What answers a replayed session instead of the world: recorded
//! responses by the digest of the request they answered, recorded results
//! of calls that write or execute, recorded answers to questions. Built
//! from the recording's trace; consumed as the replay goes.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use stud_protocol::replay_trace::{RequestParts, ToolOutcome, TraceEntry};

use super::divergence::Divergence;
use super::stream_json::events_from;
use crate::kernel::payloads::{result_parts_from, result_parts_json};
use crate::kernel::tool_outcome::Ran;
use crate::runtime::domain::{StreamEvent, ToolOutput};

type Agent = Option<String>;
/// Recorded responses by agent and request digest, in order.
type Responses = HashMap<(Agent, String), VecDeque<Vec<StreamEvent>>>;

/// A recorded answer: the question, its status and value.
struct Answered {
    agent: Agent,
    question: Value,
    status: String,
    value: Option<String>,
}

/// How a replayed question is answered.
pub enum ReplayAnswer {
    /// As recorded (`status`: accepted, rejected, timeout).
    Answered {
        status: String,
        value: Option<String>,
    },
    /// The recording halted on it (a headless run).
    Halted,
    /// The recording never asked it: refused.
    Unknown,
}

pub struct Replayer {
    responses: Mutex<Responses>,
    /// Each agent's recorded requests in order, for naming what differs.
    requests: Mutex<HashMap<Agent, VecDeque<(String, RequestParts)>>>,
    /// Requests each agent sent in the replay.
    sent: Mutex<HashMap<Agent, u64>>,
    results: Mutex<HashMap<(Agent, String), VecDeque<ToolOutcome>>>,
    answers: Mutex<Vec<Answered>>,
    /// Run tools that write or execute instead of giving their recorded
    /// results.
    pub live_tools: bool,
    turn: AtomicU64,
    /// Requests answered with a recorded response.
    served: AtomicU64,
    /// What diverged while running (requests, missing results, questions).
    divergences: Mutex<Vec<Divergence>>,
}

/// Why a trace cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("the recorded response to request {0} is not one this build can replay")]
    Response(String),
}

impl Replayer {
    pub fn new(recorded: &[TraceEntry], live_tools: bool) -> Result<Self, TraceError> {
        let mut responses: Responses = HashMap::new();
        let mut requests: HashMap<Agent, VecDeque<(String, RequestParts)>> = HashMap::new();
        let mut results: HashMap<(Agent, String), VecDeque<ToolOutcome>> = HashMap::new();
        let mut answers = Vec::new();
        for e in recorded {
            match e {
                TraceEntry::Request {
                    agent,
                    sha256,
                    parts,
                    ..
                } => requests
                    .entry(agent.clone())
                    .or_default()
                    .push_back((sha256.clone(), parts.clone())),
                TraceEntry::Response {
                    agent,
                    request,
                    events,
                } => {
                    let events =
                        events_from(events).ok_or_else(|| TraceError::Response(request.clone()))?;
                    responses
                        .entry((agent.clone(), request.clone()))
                        .or_default()
                        .push_back(events);
                }
                TraceEntry::ToolResult {
                    agent,
                    call_id,
                    outcome,
                    ..
                } => results
                    .entry((agent.clone(), call_id.clone()))
                    .or_default()
                    .push_back(outcome.clone()),
                TraceEntry::Answer {
                    agent,
                    question,
                    status,
                    value,
                } => answers.push(Answered {
                    agent: agent.clone(),
                    question: question.clone(),
                    status: status.clone(),
                    value: value.clone(),
                }),
                _ => {}
            }
        }
        Ok(Replayer {
            responses: Mutex::new(responses),
            requests: Mutex::new(requests),
            sent: Mutex::default(),
            results: Mutex::new(results),
            answers: Mutex::new(answers),
            live_tools,
            turn: AtomicU64::new(0),
            served: AtomicU64::new(0),
            divergences: Mutex::default(),
        })
    }

    /// The main session's turn now running (1-based), for the report.
    pub fn set_turn(&self, turn: u64) {
        self.turn.store(turn, Ordering::Relaxed);
    }

    pub fn turn(&self) -> u64 {
        self.turn.load(Ordering::Relaxed)
    }

    /// The recorded response to the request with digest `sha256`; without
    /// one, the divergence is noted and returned.
    pub fn respond(
        &self,
        agent: Option<&str>,
        sha256: &str,
        parts: &RequestParts,
    ) -> Result<Vec<StreamEvent>, Box<Divergence>> {
        let agent = agent.map(str::to_string);
        let n = {
            let mut sent = lock(&self.sent);
            let n = sent.entry(agent.clone()).or_default();
            *n += 1;
            *n
        };
        // The request recorded at this point, passed whether or not it
        // fits (a parallel stage may send its requests in another order).
        let expected = {
            let mut requests = lock(&self.requests);
            let queue = requests.entry(agent.clone()).or_default();
            match queue.iter().position(|(sha, _)| sha == sha256) {
                Some(i) => queue.remove(i),
                None => queue.pop_front(),
            }
        };
        let found = lock(&self.responses)
            .get_mut(&(agent.clone(), sha256.to_string()))
            .and_then(VecDeque::pop_front);
        match found {
            Some(events) => {
                self.served.fetch_add(1, Ordering::Relaxed);
                Ok(events)
            }
            None => {
                let parts = expected
                    .map(|(_, recorded)| {
                        recorded
                            .differing(parts)
                            .into_iter()
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let d = Divergence::Request {
                    turn: self.turn(),
                    agent,
                    request: n,
                    parts,
                };
                // One stop is reported once: what fails after it follows
                // from it.
                if !self.stopped() {
                    self.note(d.clone());
                }
                Err(Box::new(d))
            }
        }
    }

    /// The recorded result of call `call_id`, as the tool's run ends; a
    /// call with none is noted (the branch stops).
    pub fn result(&self, agent: Option<&str>, call_id: &str, tool: &str) -> Option<Ran> {
        let agent = agent.map(str::to_string);
        let found = lock(&self.results)
            .get_mut(&(agent.clone(), call_id.to_string()))
            .and_then(VecDeque::pop_front);
        match found {
            Some(outcome) => Some(ran_of(outcome)),
            None => {
                self.note(Divergence::NoRecordedResult {
                    turn: self.turn(),
                    agent,
                    call_id: call_id.into(),
                    tool: tool.into(),
                });
                None
            }
        }
    }

    /// The recorded answer to `question` (the first not yet used).
    pub fn answer(&self, agent: Option<&str>, question: &Value) -> ReplayAnswer {
        let mut answers = lock(&self.answers);
        let at = answers
            .iter()
            .position(|a| a.agent.as_deref() == agent && a.question == *question);
        match at.map(|i| answers.remove(i)) {
            Some(a) if a.status == "halted" => ReplayAnswer::Halted,
            Some(a) => ReplayAnswer::Answered {
                status: a.status,
                value: a.value,
            },
            None => {
                drop(answers);
                self.note(Divergence::Question {
                    turn: self.turn(),
                    agent: agent.map(str::to_string),
                    question: question.clone(),
                });
                ReplayAnswer::Unknown
            }
        }
    }

    fn note(&self, d: Divergence) {
        lock(&self.divergences).push(d);
    }

    /// Requests answered with a recorded response: each was byte for byte
    /// the request recorded.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Whether a divergence that stops the branch was met.
    pub fn stopped(&self) -> bool {
        lock(&self.divergences).iter().any(Divergence::stops_branch)
    }

    /// What diverged while running.
    pub fn take_divergences(&self) -> Vec<Divergence> {
        std::mem::take(&mut *lock(&self.divergences))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How a call ended, as a trace keeps it.
pub fn outcome_of(ran: &Ran) -> ToolOutcome {
    match ran {
        Ran::Cancelled => ToolOutcome::Cancelled,
        Ran::Ok(out) => ToolOutcome::Ok {
            content: result_parts_json(&out.content),
            details: out.details.clone(),
        },
        Ran::Failed {
            class,
            code,
            message,
            detail,
        } => ToolOutcome::Failed {
            class: class.clone(),
            code: code.clone(),
            message: message.clone(),
            detail: detail.clone(),
        },
    }
}

/// A kept outcome as the call's end.
fn ran_of(outcome: ToolOutcome) -> Ran {
    match outcome {
        ToolOutcome::Cancelled => Ran::Cancelled,
        ToolOutcome::Ok { content, details } => match result_parts_from(&Value::Array(content)) {
            Some(content) => Ran::Ok(ToolOutput { content, details }),
            None => Ran::Failed {
                class: "ToolTerminal".into(),
                code: "replay-unreadable".into(),
                message: "the recorded result is not readable".into(),
                detail: "replay: the recorded result is not readable".into(),
            },
        },
        ToolOutcome::Failed {
            class,
            code,
            message,
            detail,
        } => Ran::Failed {
            class,
            code,
            message,
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded() -> Vec<TraceEntry> {
        vec![
            TraceEntry::Request {
                agent: None,
                sha256: "aa".into(),
                bytes: 10,
                parts: RequestParts {
                    system: "s".into(),
                    messages: "m1".into(),
                    tools: "t".into(),
                    params: "p".into(),
                },
            },
            TraceEntry::Response {
                agent: None,
                request: "aa".into(),
                events: vec![json!({"text": "hi"}), json!({"finish": "stop"})],
            },
            TraceEntry::ToolResult {
                agent: None,
                call_id: "c1".into(),
                tool: "bash".into(),
                outcome: ToolOutcome::Ok {
                    content: vec![json!({"type": "text", "text": "done"})],
                    details: None,
                },
            },
            TraceEntry::Answer {
                agent: None,
                question: json!({"confirm": "go on?"}),
                status: "accepted".into(),
                value: Some("yes".into()),
            },
            TraceEntry::Answer {
                agent: None,
                question: json!({"approve": "bash", "key": "ls"}),
                status: "halted".into(),
                value: None,
            },
        ]
    }

    #[test]
    fn a_recorded_request_is_answered_and_another_names_its_parts_once() {
        let r = Replayer::new(&recorded(), false).unwrap();
        r.set_turn(1);
        let parts = |messages: &str| RequestParts {
            system: "s".into(),
            messages: messages.into(),
            tools: "t".into(),
            params: "p".into(),
        };
        let events = r.respond(None, "aa", &parts("m1")).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(r.served(), 1);
        // The same bytes again: nothing recorded is left for them.
        let d = r.respond(None, "aa", &parts("m1")).unwrap_err();
        assert!(
            matches!(*d, Divergence::Request { request: 2, .. }),
            "{d:?}"
        );
        assert!(r.stopped());
        let later = r.respond(None, "bb", &parts("m2"));
        assert!(later.is_err());
        assert_eq!(r.take_divergences().len(), 1, "one stop, reported once");
    }

    #[test]
    fn a_differing_request_names_the_part_that_differs() {
        let r = Replayer::new(&recorded(), false).unwrap();
        let other = RequestParts {
            system: "s".into(),
            messages: "m2".into(),
            tools: "t".into(),
            params: "p".into(),
        };
        let d = r.respond(None, "bb", &other).unwrap_err();
        assert!(
            matches!(&*d, Divergence::Request { parts, .. } if parts == &["messages"]),
            "{d:?}"
        );
    }

    #[test]
    fn results_and_answers_come_from_the_recording_or_are_divergences() {
        let r = Replayer::new(&recorded(), false).unwrap();
        assert!(matches!(r.result(None, "c1", "bash"), Some(Ran::Ok(_))));
        // Another call of the same id finds nothing left: it stops.
        assert!(r.result(None, "c1", "bash").is_none());
        assert!(r.stopped());
        assert!(matches!(
            r.answer(None, &json!({"confirm": "go on?"})),
            ReplayAnswer::Answered { ref status, .. } if status == "accepted"
        ));
        assert!(matches!(
            r.answer(None, &json!({"approve": "bash", "key": "ls"})),
            ReplayAnswer::Halted
        ));
        assert!(matches!(
            r.answer(None, &json!({"ask": "never asked"})),
            ReplayAnswer::Unknown
        ));
        let kinds: Vec<String> = r
            .take_divergences()
            .iter()
            .map(|d| {
                serde_json::to_value(d).unwrap()["kind"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(kinds, ["no-recorded-result", "question"]);
    }
}
