//! `stud session list [--all] [--json]`: this folder's sessions, or every
//! one the store keeps. A team's shared store may hold 100,000 of them, so
//! children are counted in one pass and the listing is written at once.

use std::collections::HashMap;
use std::io::Write as _;

use serde::Serialize;

use crate::kernel::agents::{is_child_id, parent_id};
use crate::runtime::domain::SessionSummary;

#[derive(Serialize)]
struct Item<'a> {
    session_id: &'a str,
    project_root: &'a str,
    created_ms: u64,
    updated_ms: u64,
    title: &'a str,
    agents: usize,
}

/// Print `all` (a store's listing) as seen from the folder `here`.
pub fn print(all: &[SessionSummary], here: &str, every: bool, json: bool) -> anyhow::Result<()> {
    let mut agents: HashMap<&str, usize> = HashMap::new();
    for s in all {
        if let Some(parent) = parent_id(&s.session_id) {
            *agents.entry(parent).or_default() += 1;
        }
    }
    let children = |id: &str| agents.get(id).copied().unwrap_or(0);
    let mut sessions: Vec<&SessionSummary> = all
        .iter()
        .filter(|s| !is_child_id(&s.session_id) && (every || s.project_root == here))
        .collect();
    sessions.sort_by_key(|s| (s.project_root != here, std::cmp::Reverse(s.updated_ms)));
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    if json {
        let items: Vec<Item> = sessions
            .iter()
            .map(|s| Item {
                session_id: &s.session_id,
                project_root: &s.project_root,
                created_ms: s.created_ms,
                updated_ms: s.updated_ms,
                title: &s.title,
                agents: children(&s.session_id),
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &items)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    // Each part made terminal-safe as it is written: titles are the
    // model's and the person's words.
    let safe = stud_protocol::terminal::safe;
    for s in &sessions {
        write!(
            out,
            "{}  {}  {}",
            safe(&s.session_id),
            safe(&s.project_root),
            safe(&s.title)
        )?;
        match children(&s.session_id) {
            0 => writeln!(out)?,
            1 => writeln!(out, "  (+1 agent session)")?,
            n => writeln!(out, "  (+{n} agent sessions)")?,
        }
    }
    if sessions.is_empty() {
        let elsewhere = all
            .iter()
            .filter(|s| !is_child_id(&s.session_id) && s.project_root != here)
            .count();
        if every || elsewhere == 0 {
            writeln!(out, "(no sessions)")?;
        } else {
            writeln!(
                out,
                "(no sessions in this folder; `stud session list --all` shows {elsewhere} elsewhere)"
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
