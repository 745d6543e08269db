//! `stud audit`: the authority stack's decisions across every kept
//! session (all projects) of the active session store, filtered by tool,
//! mode, decision, layer, session and day: "which sessions ran `bash` in
//! yolo mode last week" is `stud audit --tool bash --mode yolo --decision
//! approve --since 2026-11-20 --sessions`. Everything printed is data from
//! the sessions' records and goes through `terminal::safe`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::kernel::agents::is_child_id;
use crate::kernel::audit::{AuditQuery, AuditRow, day_start_ms, rows_of, utc_time};

#[derive(Args)]
pub struct AuditArgs {
    /// Only calls of this tool (`bash`, `mcp__server__tool`).
    #[arg(long)]
    pub tool: Option<String>,
    /// Only calls decided under this security mode (ask, allowlist, yolo).
    #[arg(long)]
    pub mode: Option<String>,
    /// Only this decision: approve, deny, halt or pass.
    #[arg(long)]
    pub decision: Option<String>,
    /// Only this layer: state-machine, mode, interaction, guard:<id>.
    #[arg(long)]
    pub layer: Option<String>,
    /// Only this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only decisions on or after this day (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// One line per session that has a matching decision, with the count.
    #[arg(long)]
    pub sessions: bool,
    /// As JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    const DECISIONS: [&str; 4] = ["approve", "deny", "halt", "pass"];
    if let Some(d) = &args.decision
        && !DECISIONS.contains(&d.as_str())
    {
        anyhow::bail!("--decision {d}: expected one of {}", DECISIONS.join(", "));
    }
    let query = AuditQuery {
        tool: args.tool.clone(),
        mode: args.mode.clone(),
        decision: args.decision.clone(),
        layer: args.layer.clone(),
        session: args.session.clone(),
        since_ms: args
            .since
            .as_deref()
            .map(|d| day_start_ms("--since", d))
            .transpose()?,
    };
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let rows = rt.block_on(async {
        let (store, _) = super::session::store().await?;
        let mut rows: Vec<AuditRow> = Vec::new();
        for s in store.store_list().await? {
            // A child's decisions are in its parent's records (with its
            // agent path); a session last written before `--since` has none
            // after it.
            if is_child_id(&s.session_id)
                || query.since_ms.is_some_and(|t| s.updated_ms < t)
                || query
                    .session
                    .as_deref()
                    .is_some_and(|id| id != s.session_id)
            {
                continue;
            }
            let data = store.store_read(&s.session_id).await?;
            let manifest: serde_json::Value =
                serde_json::from_str(&data.manifest).unwrap_or_default();
            rows.extend(
                rows_of(&s.session_id, &manifest, &data.records)
                    .into_iter()
                    .filter(|r| query.keeps(r)),
            );
        }
        rows.sort_by_key(|r| r.at_ms);
        anyhow::Ok(rows)
    })?;
    if args.sessions {
        let mut by: BTreeMap<&str, (&str, usize, u64)> = BTreeMap::new();
        for r in &rows {
            let e = by.entry(&r.session_id).or_insert((&r.project_root, 0, 0));
            e.1 += 1;
            e.2 = e.2.max(r.at_ms);
        }
        if args.json {
            let items: Vec<_> = by
                .iter()
                .map(|(id, (project, n, last))| {
                    serde_json::json!({"session_id": id, "project_root": project, "decisions": n, "last_ms": last})
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&items)?);
        } else {
            for (id, (project, n, _)) in &by {
                outln!(
                    "{id}  {project}  {n} decision{}",
                    if *n == 1 { "" } else { "s" }
                );
            }
        }
    } else if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for r in &rows {
            let key: String = r.key.lines().collect::<Vec<_>>().join("; ");
            let agent = r
                .agent
                .as_deref()
                .map(|a| format!(" [{a}]"))
                .unwrap_or_default();
            outln!(
                "{}  {}{agent}  {} `{key}`  {} by {} ({} mode): {}",
                utc_time(r.at_ms),
                r.session_id,
                r.tool,
                r.decision,
                r.layer,
                r.mode,
                r.reason
            );
        }
    }
    if rows.is_empty() && !args.json {
        outln!("(no decisions match)");
    }
    Ok(ExitCode::SUCCESS)
}
