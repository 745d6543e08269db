//! The audit trail across kept sessions (`stud audit`): every decision of
//! the authority stack, as each session's trace records keep it, with the
//! session, its project and the security mode that applied, filtered by
//! tool, mode, decision, layer, session and time. It reads through the
//! session-store contract, so it works on whichever store is active.

use serde::Serialize;
use serde_json::Value;
use stud_protocol::replay_trace::TraceEntry;

/// One layer's decision on one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRow {
    pub at_ms: u64,
    pub session_id: String,
    pub project_root: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub call_id: String,
    pub tool: String,
    pub key: String,
    pub decision: String,
    pub layer: String,
    pub reason: String,
    /// The security mode the call was decided under.
    pub mode: String,
}

/// What to keep; `None` keeps everything.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub tool: Option<String>,
    pub mode: Option<String>,
    pub decision: Option<String>,
    pub layer: Option<String>,
    pub session: Option<String>,
    pub since_ms: Option<u64>,
}

impl AuditQuery {
    pub fn keeps(&self, r: &AuditRow) -> bool {
        let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        is(&self.tool, &r.tool)
            && is(&self.mode, &r.mode)
            && is(&self.decision, &r.decision)
            && is(&self.layer, &r.layer)
            && is(&self.session, &r.session_id)
            && self.since_ms.is_none_or(|t| r.at_ms >= t)
    }
}

/// The decisions one kept session's records hold. A call's rows carry the
/// mode its mode layer recorded; a call the mode never saw (a workflow
/// stage decided it) carries the session's mode.
pub fn rows_of(session_id: &str, manifest: &Value, records: &[String]) -> Vec<AuditRow> {
    let project_root = manifest["project_root"].as_str().unwrap_or_default();
    let session_mode = manifest["security_mode"].as_str().unwrap_or_default();
    let mut rows: Vec<AuditRow> = Vec::new();
    // Where the current call's rows start, and the mode it was decided in.
    let mut call_start = 0;
    let mut call_mode: Option<String> = None;
    for e in stud_protocol::replay_trace::entries_of(records) {
        let TraceEntry::Decision {
            agent,
            call_id,
            tool,
            key,
            decision,
            layer,
            reason,
            mode,
            at_ms,
        } = e
        else {
            continue;
        };
        let same_call = rows
            .last()
            .is_some_and(|last| last.call_id == call_id && last.agent == agent);
        if !same_call {
            settle(&mut rows[call_start..], call_mode.take(), session_mode);
            call_start = rows.len();
        }
        if mode.is_some() {
            call_mode = mode;
        }
        rows.push(AuditRow {
            at_ms,
            session_id: session_id.to_string(),
            project_root: project_root.to_string(),
            agent,
            call_id,
            tool,
            key,
            decision: decision.to_string(),
            layer,
            reason,
            mode: String::new(),
        });
    }
    settle(&mut rows[call_start..], call_mode, session_mode);
    rows
}

fn settle(call: &mut [AuditRow], mode: Option<String>, session_mode: &str) {
    let mode = mode.unwrap_or_else(|| session_mode.to_string());
    for r in call {
        r.mode = mode.clone();
    }
}

/// Why a day was not read.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {date}: expected a day as YYYY-MM-DD")]
pub struct BadDay {
    pub flag: &'static str,
    pub date: String,
}

/// Milliseconds since the epoch at the start of day `date` (UTC).
pub fn day_start_ms(flag: &'static str, date: &str) -> Result<u64, BadDay> {
    let bad = || BadDay {
        flag,
        date: date.to_string(),
    };
    let mut parts = date
        .splitn(3, '-')
        .map(|p| p.parse::<i64>().map_err(|_| bad()));
    let (y, m, d) = (
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
        return Err(bad());
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok((days * 86_400_000) as u64)
}

/// `YYYY-MM-DD HH:MM:SS` UTC of `ms` since the epoch (the inverse of
/// [`day_start_ms`], to the second).
pub fn utc_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use stud_protocol::words::Decision;

    fn decision(call: &str, layer: &str, d: Decision, mode: Option<&str>) -> Value {
        serde_json::to_value(TraceEntry::Decision {
            agent: None,
            call_id: call.into(),
            tool: "bash".into(),
            key: "ls".into(),
            decision: d,
            layer: layer.into(),
            reason: "r".into(),
            mode: mode.map(str::to_string),
            at_ms: 1000,
        })
        .unwrap()
    }

    use stud_protocol::session_records::SessionRecord;

    #[test]
    fn each_call_carries_the_mode_it_was_decided_in() {
        let record = SessionRecord::Trace {
            entries: vec![
                decision("c1", "state-machine", Decision::Pass, None),
                decision("c1", "mode", Decision::Approve, Some("yolo")),
                decision("c1", "guard:g", Decision::Deny, None),
                decision("c2", "state-machine", Decision::Approve, None),
            ],
        }
        .to_line();
        let manifest = json!({"project_root": "/p", "security_mode": "ask"});
        let rows = rows_of("s1", &manifest, &[record]);
        let modes: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|r| (r.call_id.as_str(), r.layer.as_str(), r.mode.as_str()))
            .collect();
        assert_eq!(
            modes,
            [
                ("c1", "state-machine", "yolo"),
                ("c1", "mode", "yolo"),
                ("c1", "guard:g", "yolo"),
                ("c2", "state-machine", "ask"),
            ]
        );
        let q = AuditQuery {
            tool: Some("bash".into()),
            mode: Some("yolo".into()),
            decision: Some("deny".into()),
            ..Default::default()
        };
        let kept: Vec<&AuditRow> = rows.iter().filter(|r| q.keeps(r)).collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].layer, "guard:g");
        assert!(
            !AuditQuery {
                since_ms: Some(2000),
                ..Default::default()
            }
            .keeps(&rows[0])
        );
    }

    #[test]
    fn days_are_read_as_utc_midnight() {
        assert_eq!(day_start_ms("--since", "1970-01-01").unwrap(), 0);
        assert_eq!(
            day_start_ms("--since", "2026-11-27").unwrap(),
            1_795_737_600_000
        );
        assert!(day_start_ms("--since", "2026-13-01").is_err());
        assert!(day_start_ms("--since", "yesterday").is_err());
        assert_eq!(utc_time(0), "1970-01-01 00:00:00");
        assert_eq!(
            utc_time(1_795_737_600_000 + 3_723_000),
            "2026-11-27 01:02:03"
        );
        let day = day_start_ms("--since", "2024-02-29").unwrap();
        assert_eq!(utc_time(day), "2024-02-29 00:00:00");
    }
}
