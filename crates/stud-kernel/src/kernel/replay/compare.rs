//! The recording's trace against the replay's: each call's decisions,
//! each result of a call that ran again, the workflow's stage path. Calls
//! are matched by agent, call id and the response that made them (ids
//! repeat across responses with some providers).

use std::collections::BTreeMap;

use stud_protocol::replay_trace::{ToolOutcome, TraceEntry};

use super::divergence::{Divergence, Step};

type CallKey = (Option<String>, String, u64);

struct Call {
    turn: u64,
    tool: String,
    key: String,
    steps: Vec<Step>,
}

#[derive(Default)]
struct Indexed {
    decisions: BTreeMap<CallKey, Call>,
    results: BTreeMap<CallKey, (u64, String, ToolOutcome)>,
    /// Stage executions as they began (the path), then as they ended.
    path: Vec<(u64, String)>,
    stages: Vec<(u64, String)>,
}

fn index(entries: &[TraceEntry]) -> Indexed {
    let mut out = Indexed::default();
    let mut turn = 0;
    let mut responses: BTreeMap<Option<String>, u64> = BTreeMap::new();
    for e in entries {
        match e {
            TraceEntry::Input { .. } => turn += 1,
            TraceEntry::Response { agent, .. } => *responses.entry(agent.clone()).or_default() += 1,
            TraceEntry::Decision {
                agent,
                call_id,
                tool,
                key,
                decision,
                layer,
                reason,
                ..
            } => {
                let n = responses.get(agent).copied().unwrap_or(0);
                out.decisions
                    .entry((agent.clone(), call_id.clone(), n))
                    .or_insert_with(|| Call {
                        turn,
                        tool: tool.clone(),
                        key: key.clone(),
                        steps: Vec::new(),
                    })
                    .steps
                    .push(Step {
                        layer: layer.clone(),
                        decision: decision.to_string(),
                        reason: reason.clone(),
                    });
            }
            TraceEntry::ToolResult {
                agent,
                call_id,
                tool,
                outcome,
            } => {
                let n = responses.get(agent).copied().unwrap_or(0);
                out.results.insert(
                    (agent.clone(), call_id.clone(), n),
                    (turn, tool.clone(), outcome.clone()),
                );
            }
            TraceEntry::StageStarted { stage_id, attempt } => out
                .path
                .push((turn, format!("{stage_id} (attempt {attempt})"))),
            TraceEntry::Stage {
                stage_id, outcome, ..
            } => out.stages.push((turn, format!("{stage_id} ({outcome})"))),
            _ => {}
        }
    }
    out
}

/// What the replay decided or returned differently. `finished`: the
/// replay ran to the end (a stage path that ends early then diverges).
pub fn compare(
    recorded: &[TraceEntry],
    replayed: &[TraceEntry],
    finished: bool,
) -> Vec<Divergence> {
    let rec = index(recorded);
    let rep = index(replayed);
    let mut out = Vec::new();
    for (k, r) in &rec.decisions {
        if let Some(p) = rep.decisions.get(k)
            && p.steps != r.steps
        {
            out.push(Divergence::Decision {
                turn: r.turn,
                agent: k.0.clone(),
                call_id: k.1.clone(),
                tool: r.tool.clone(),
                key: r.key.clone(),
                recorded: r.steps.clone(),
                replayed: p.steps.clone(),
            });
        }
    }
    for (k, (turn, tool, r)) in &rec.results {
        if let Some((_, _, p)) = rep.results.get(k)
            && !same_result(p, r)
        {
            out.push(Divergence::ToolResult {
                turn: *turn,
                agent: k.0.clone(),
                call_id: k.1.clone(),
                tool: tool.clone(),
                recorded: summary(r),
                replayed: summary(p),
            });
        }
    }
    // The path first (a stage the replay entered that the recording did
    // not), then how the executions ended.
    if let Some(d) = first_difference(&rec.path, &rep.path, finished)
        .or_else(|| first_difference(&rec.stages, &rep.stages, finished))
    {
        out.push(d);
    }
    out.sort_by_key(turn_of);
    out
}

/// Where two sequences of stage executions first differ. A replay that
/// stopped early ran fewer: that alone is no difference.
fn first_difference(
    rec: &[(u64, String)],
    rep: &[(u64, String)],
    finished: bool,
) -> Option<Divergence> {
    for i in 0..rec.len().max(rep.len()) {
        let (r, p) = (rec.get(i), rep.get(i));
        if p.is_none() && !finished {
            return None;
        }
        if r.map(|s| &s.1) != p.map(|s| &s.1) {
            return Some(Divergence::Workflow {
                turn: r.or(p).map_or(0, |s| s.0),
                position: i as u64,
                recorded: r.map(|s| s.1.clone()),
                replayed: p.map(|s| s.1.clone()),
            });
        }
    }
    None
}

/// A divergence's place in the report: its turn, then what happened
/// first within the turn (a call decided or answered differently comes
/// before the request that carries its other result).
fn turn_of(d: &Divergence) -> (u64, u8) {
    let rank = match d {
        Divergence::Decision { .. } => 0,
        Divergence::Question { .. } => 1,
        Divergence::ToolResult { .. } => 2,
        Divergence::NoRecordedResult { .. } => 3,
        Divergence::Workflow { .. } => 4,
        Divergence::Request { .. } => 5,
    };
    (turn_only(d), rank)
}

fn turn_only(d: &Divergence) -> u64 {
    match d {
        Divergence::Request { turn, .. }
        | Divergence::Decision { turn, .. }
        | Divergence::ToolResult { turn, .. }
        | Divergence::NoRecordedResult { turn, .. }
        | Divergence::Question { turn, .. }
        | Divergence::Workflow { turn, .. } => *turn,
    }
}

/// Sort a whole report by turn (stable: the order found within a turn).
pub fn by_turn(report: &mut [Divergence]) {
    report.sort_by_key(turn_of);
}

/// Whether two outcomes say the same to the model: their content and
/// failure, not their `details` or a failure's `detail` (metadata for UIs
/// and events: a child session's id, a duration), which the model never
/// sees.
fn same_result(a: &ToolOutcome, b: &ToolOutcome) -> bool {
    match (a, b) {
        (ToolOutcome::Ok { content: x, .. }, ToolOutcome::Ok { content: y, .. }) => x == y,
        (
            ToolOutcome::Failed {
                class,
                code,
                message,
                ..
            },
            ToolOutcome::Failed {
                class: c,
                code: o,
                message: m,
                ..
            },
        ) => (class, code, message) == (c, o, m),
        _ => a == b,
    }
}

/// An outcome in one line, clipped.
fn summary(o: &ToolOutcome) -> String {
    let text = match o {
        ToolOutcome::Cancelled => "cancelled".to_string(),
        ToolOutcome::Ok { content, .. } => content
            .iter()
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        ToolOutcome::Failed { code, message, .. } => format!("failed ({code}): {message}"),
    };
    let mut s: String = text.chars().take(160).collect();
    if text.chars().count() > 160 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use stud_protocol::words::Decision;

    fn decision(call: &str, d: Decision, layer: &str, reason: &str) -> TraceEntry {
        TraceEntry::Decision {
            agent: None,
            call_id: call.into(),
            tool: "bash".into(),
            key: "rm x".into(),
            decision: d,
            layer: layer.into(),
            reason: reason.into(),
            mode: None,
            at_ms: 0,
        }
    }

    fn response() -> TraceEntry {
        TraceEntry::Response {
            agent: None,
            request: "r".into(),
            events: vec![],
        }
    }

    #[test]
    fn same_trace_has_no_divergence_and_a_changed_decision_is_named() {
        let input = TraceEntry::Input { text: "go".into() };
        let rec = vec![
            input.clone(),
            response(),
            decision("c1", Decision::Approve, "mode", "yolo"),
        ];
        assert!(compare(&rec, &rec, true).is_empty());
        let rep = vec![
            input,
            response(),
            decision("c1", Decision::Approve, "mode", "yolo"),
            decision("c1", Decision::Deny, "guard:strict", "no rm"),
        ];
        let d = compare(&rec, &rep, true);
        assert_eq!(d.len(), 1, "{d:?}");
        let text = d[0].to_string();
        assert!(text.contains("turn 1"), "{text}");
        assert!(
            text.ends_with("recorded no decision; now deny by guard:strict (no rm)"),
            "the layers both agree on are left out: {text}"
        );
    }

    #[test]
    fn the_same_call_id_in_another_response_is_another_call() {
        let rec = vec![
            response(),
            decision("c1", Decision::Approve, "mode", "yolo"),
            response(),
            decision("c1", Decision::Deny, "mode", "ask"),
        ];
        assert!(compare(&rec, &rec, true).is_empty());
    }
}
