//! The tool-call authority stack: state machine, then the security mode,
//! then guard hooks (run by the caller at `tool-call.pre`). Every layer's
//! decision, allows and passes included, is an audit record saying which
//! layer decided and why, so each call's trail shows the whole stack.
//!
//! Modes are fixed for the session. `ask` approves read-only tools and
//! calls the person already approved this session (by tool and approval
//! key) without asking; `allowlist` approves calls matching a pattern and
//! asks for the rest; `yolo` approves everything.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::Value;

use super::events::Bus;
use super::interaction::{Answer, Interactions};
use crate::config::edit::{edit_settings, list_at, object_at};
use crate::mcp::tool::MCP_PREFIX;
use crate::runtime::domain::{Approval, InteractionKind, InteractionStatus};
use stud_protocol::events::{Decision as Audited, KernelEvent};

pub use crate::mode::Mode;

/// An allowlist entry: `tool` (= `tool:*`) or `tool:<pattern over one
/// line of the approval key>`. In the pattern only `*` is special (any run
/// of characters, `/` included, never a line end); everything else is
/// literal and the pattern is anchored at both ends.
///
/// An entry for an MCP tool, `mcp__<server>__<tool>[:key]`, is read as two
/// fields, split at the first `__` after `mcp__` (a server id never has
/// `__`), and each is matched against what the kernel knows of the call:
/// the server it goes to and that server's tool, never the name string.
/// `mcp__github__*` is every tool of server `github` and nothing else. An
/// entry for a stud tool never approves an MCP tool (`*` is every stud
/// tool), and an MCP entry never approves a stud tool, whatever its name.
#[derive(Debug, Clone)]
pub struct AllowPattern {
    text: String,
    target: Target,
    /// `None`: any key (`tool` alone).
    key: Option<String>,
    reach: Reach,
}

/// Which tools an entry may approve, by who wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// An entry of the user's global settings: a standing decision about
    /// the tools the user installed (bundled and global extensions, the
    /// user's and the editor's MCP servers). It never approves a tool a
    /// project brought, even one that took the id of the user's own
    /// (`mytool:*` must not approve a repository's `mytool`).
    Own,
    /// An entry of a project's accepted review, of the command line or
    /// added in this session's approval dialog: any tool of the session.
    Any,
}

/// What an entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Stud tools by name (a pattern).
    Tool(String),
    /// MCP tools: a pattern for the server id and one for its tool.
    Mcp { server: String, tool: String },
}

/// What a call runs, as the allowlist matches it: known from the tool
/// table's entry (who provides the tool), not read from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callee<'a> {
    /// A stud tool (a component's, or the kernel's), by its name.
    Tool(&'a str),
    /// Tool `tool` (as the session names it after `mcp__<server>__`) of
    /// MCP server `server`.
    Mcp { server: &'a str, tool: &'a str },
}

/// A key line a tool could not classify with certainty (a shell line with
/// a substitution, say, from `stud_sdk_shell`): only an entry without
/// `*` that names it exactly approves it.
pub const UNCLASSIFIED: &str = "(unclassified) ";

impl AllowPattern {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (tool, key) = match text.split_once(':') {
            Some((t, k)) => (t, Some(k)),
            None => (text, None),
        };
        if tool.is_empty() {
            return Err(format!(
                "allowlist entry `{text}` has no tool name; write `tool` or `tool:pattern`"
            ));
        }
        if key.is_some_and(|k| k.contains(['\n', '\r'])) {
            return Err(format!(
                "allowlist entry `{text}` has a line break; a pattern matches one line"
            ));
        }
        let target = match tool.strip_prefix(MCP_PREFIX) {
            None => Target::Tool(tool.to_string()),
            Some(rest) => match rest.split_once("__") {
                Some((server, tool)) if !server.is_empty() && !tool.is_empty() => Target::Mcp {
                    server: server.to_string(),
                    tool: tool.to_string(),
                },
                _ => {
                    return Err(format!(
                        "allowlist entry `{text}` does not name an MCP server and tool; write `mcp__<server>__<tool>` (`mcp__github__*` for every tool of server `github`, `mcp__*__*` for every MCP tool)"
                    ));
                }
            },
        };
        Ok(AllowPattern {
            text: text.to_string(),
            target,
            key: key.map(str::to_string),
            reach: Reach::Own,
        })
    }

    /// The entry, approving tools as far as `reach` says (parsed entries
    /// reach only the user's own tools).
    pub fn reaching(mut self, reach: Reach) -> Self {
        self.reach = reach;
        self
    }

    /// Whether the entry may approve a call to a tool a project brought.
    fn approves_project_tools(&self) -> bool {
        self.reach == Reach::Any
    }

    /// Whether the entry approves one line of the key of a call to
    /// `callee`. The name parts may use `*` too (`mcp__github__*`: every
    /// tool of one MCP server).
    pub fn matches(&self, callee: Callee<'_>, line: &str) -> bool {
        let named = match (&self.target, callee) {
            (Target::Tool(pattern), Callee::Tool(name)) => wildcard_match(pattern, name),
            (
                Target::Mcp {
                    server: sp,
                    tool: tp,
                },
                Callee::Mcp { server, tool },
            ) => wildcard_match(sp, server) && wildcard_match(tp, tool),
            (Target::Tool(_), Callee::Mcp { .. }) | (Target::Mcp { .. }, Callee::Tool(_)) => false,
        };
        if !named || line.contains(['\n', '\r']) {
            return false;
        }
        let pattern = self.key.as_deref();
        if line.starts_with(UNCLASSIFIED) {
            return pattern.is_some_and(|p| !p.contains('*') && p == line);
        }
        pattern.is_none_or(|p| wildcard_match(p, line))
    }
}

/// The entries that approve exactly `key` of `tool`: one per key line
/// (`tool:line`, never the bare `tool`, which would approve any key).
pub fn allowlist_entries(tool: &str, key: &str) -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    let lines: Vec<&str> = if key.is_empty() {
        vec![""]
    } else {
        key.lines().collect()
    };
    for line in lines {
        let e = format!("{tool}:{line}");
        if !entries.contains(&e) {
            entries.push(e);
        }
    }
    entries
}

/// `*` matches any run of characters; the rest is literal; anchored.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let middle: Vec<&str> = parts.collect();
    let Some((last, inner)) = middle.split_last() else {
        // No `*` at all: the whole text must be the literal.
        return rest.is_empty();
    };
    for piece in inner {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The decision before guards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny(String),
    /// Headless run and a person was needed: stop the turn, no denial.
    Halt,
}

/// A call as the authority sees it.
pub struct Proposal<'a> {
    pub call_id: &'a str,
    /// The tool's name in this session (what is shown and audited).
    pub tool: &'a str,
    /// What the call runs, which allowlist entries are matched against.
    pub callee: Callee<'a>,
    /// The tool was brought by the project (a project extension, a
    /// project's MCP server): entries of the user's global settings do not
    /// approve it ([`Reach::Own`]).
    pub project_tool: bool,
    pub key: &'a str,
    pub read_only: bool,
    pub description: String,
}

pub struct Authority {
    mode: Mode,
    /// Grows when the person adds entries from an approval dialog.
    allowlist: Mutex<Vec<AllowPattern>>,
    approved: Mutex<HashSet<(String, String)>>,
    /// The global settings, where "add to allowlist" writes; `None`: the
    /// dialog's choice only approves the call.
    settings_file: Option<PathBuf>,
    bus: Bus,
    /// A child session's agent path, shown with every question it asks.
    agent: Option<String>,
}

/// The approval answer (the `value` of an accepted `approve`) that asks
/// for the call's key to be added to the global allowlist.
pub const ADD_TO_ALLOWLIST: &str = "allowlist";

impl Authority {
    pub fn new(mode: Mode, allowlist: Vec<AllowPattern>, bus: Bus) -> Self {
        Authority {
            mode,
            allowlist: Mutex::new(allowlist),
            approved: Mutex::default(),
            settings_file: None,
            bus,
            agent: None,
        }
    }

    /// The authority of a child session at `path`: `mode` if it is
    /// stricter than this one's, else this one's; the allowlist as it is
    /// now; none of this session's approvals (the child's calls are asked
    /// again, labelled with its path).
    pub fn child(&self, mode: Mode, path: &str, bus: Bus) -> Authority {
        Authority {
            mode: self.mode.stricter(mode),
            allowlist: Mutex::new(
                self.allowlist
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            ),
            approved: Mutex::default(),
            settings_file: self.settings_file.clone(),
            bus,
            agent: Some(path.to_string()),
        }
    }

    /// A `task` call: approved here, because starting a child changes
    /// nothing and every call the child makes is decided on its own.
    pub fn approve_delegation(&self, p: &Proposal<'_>) {
        self.audit(
            p,
            &Decision::Approve,
            "mode",
            "delegation: each call of the agent passes the authority stack itself",
        );
    }

    /// Where "add to allowlist" writes (the global settings file).
    pub fn with_settings_file(mut self, file: PathBuf) -> Self {
        self.settings_file = Some(file);
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The mode gate, asking the person when the mode says so (the state
    /// machine layer before it has passed the call, see
    /// [`audit_no_state_machine`](Self::audit_no_state_machine)).
    pub async fn decide(&self, p: &Proposal<'_>, interactions: &Interactions) -> Decision {
        let (decision, layer, reason) = self.mode_gate(p, interactions).await;
        self.audit(p, &decision, layer, &reason);
        decision
    }

    /// The entries that approve `key`: every line of it (a shell tool's key
    /// has one per simple command) must match one, or the call is asked.
    fn allowlisted(&self, callee: Callee<'_>, project_tool: bool, key: &str) -> Option<String> {
        let mut lines: Vec<&str> = key.lines().collect();
        if lines.is_empty() {
            lines.push("");
        }
        let allowlist = self.allowlist.lock().unwrap_or_else(|e| e.into_inner());
        let mut used: Vec<&str> = Vec::new();
        for line in lines {
            let entry = allowlist
                .iter()
                .filter(|a| !project_tool || a.approves_project_tools())
                .find(|a| a.matches(callee, line))?;
            if !used.contains(&entry.text.as_str()) {
                used.push(&entry.text);
            }
        }
        Some(used.join("`, `"))
    }

    async fn mode_gate(
        &self,
        p: &Proposal<'_>,
        interactions: &Interactions,
    ) -> (Decision, &'static str, String) {
        match self.mode {
            Mode::Yolo => {
                return (
                    Decision::Approve,
                    "mode",
                    "yolo mode approves every call".into(),
                );
            }
            Mode::Allowlist => {
                if let Some(entries) = self.allowlisted(p.callee, p.project_tool, p.key) {
                    return (
                        Decision::Approve,
                        "mode",
                        format!("allowlist entry `{entries}`"),
                    );
                }
            }
            Mode::Ask => {
                if p.read_only {
                    return (Decision::Approve, "mode", "read-only tool".into());
                }
                let cached = self
                    .approved
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains(&(p.tool.to_string(), p.key.to_string()));
                if cached {
                    return (
                        Decision::Approve,
                        "mode",
                        "approved earlier in this session".into(),
                    );
                }
            }
        }
        let description = match &self.agent {
            Some(path) => format!("[agent {path}] {}", p.description),
            None => p.description.clone(),
        };
        let ask = InteractionKind::Approve(Approval {
            tool: p.tool.to_string(),
            approval_key: p.key.to_string(),
            description,
        });
        match interactions.request(ask).await {
            Answer::Halt => (
                Decision::Halt,
                "interaction",
                "approval needed but no one can answer (headless run)".into(),
            ),
            Answer::Response(r)
                if r.status == InteractionStatus::Accepted
                    && self.mode == Mode::Allowlist
                    && r.value.as_deref() == Some(ADD_TO_ALLOWLIST) =>
            {
                let reason = self.add_to_allowlist(p, interactions).await;
                (Decision::Approve, "interaction", reason)
            }
            Answer::Response(r) if r.status == InteractionStatus::Accepted => {
                // "Allow once" is not remembered; any other yes (the line
                // console's, "allow for this session") is, for this key.
                if self.mode == Mode::Ask && r.value.as_deref() != Some("once") {
                    self.approved
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert((p.tool.to_string(), p.key.to_string()));
                }
                (
                    Decision::Approve,
                    "interaction",
                    "approved by the user".into(),
                )
            }
            Answer::Response(r) if r.status == InteractionStatus::Timeout => (
                Decision::Deny("the approval request timed out".into()),
                "interaction",
                "timed out".into(),
            ),
            Answer::Response(_) => (
                Decision::Deny("the user declined this call".into()),
                "interaction",
                "declined by the user".into(),
            ),
        }
    }

    /// The person chose "add to allowlist": show the exact entries, ask
    /// once more (they apply to every later session, in every project),
    /// then write them to the global settings and use them from now on.
    /// The call itself was approved either way; the reason says what
    /// became of the entries.
    async fn add_to_allowlist(&self, p: &Proposal<'_>, interactions: &Interactions) -> String {
        let Some(file) = self.settings_file.as_ref() else {
            return "approved by the user (no settings file to add the entry to)".into();
        };
        let entries = allowlist_entries(p.tool, p.key);
        let wildcard = if entries.iter().any(|e| e.contains('*')) {
            " A `*` in an entry matches any text."
        } else {
            ""
        };
        let prompt = format!(
            "Add to the allowlist in {}:\n  {}\nMatching calls then run without asking, in every project.{wildcard}",
            file.display(),
            entries.join("\n  ")
        );
        match interactions.request(InteractionKind::Confirm(prompt)).await {
            Answer::Response(r) if r.status == InteractionStatus::Accepted => {}
            _ => return "approved by the user once (not added to the allowlist)".into(),
        }
        let written = edit_settings(file, |root| {
            let mode = object_at(root, "securityMode", "securityMode")?;
            let list = list_at(mode, "allowlist", "securityMode.allowlist")?;
            let mut changed = false;
            for e in &entries {
                if !list.iter().any(|v| v.as_str() == Some(e)) {
                    list.push(Value::String(e.clone()));
                    changed = true;
                }
            }
            Ok(((), changed))
        });
        if let Err(e) = written {
            return format!("approved by the user once; the allowlist was not changed: {e}");
        }
        let parsed: Vec<AllowPattern> = entries
            .iter()
            .filter_map(|e| AllowPattern::parse(e).ok())
            // The person approved this very call: in this session the
            // entries reach whatever tool it was.
            .map(|e| e.reaching(Reach::Any))
            .collect();
        self.allowlist
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(parsed);
        self.bus.record(KernelEvent::AllowlistAdded {
            tool: p.tool.into(),
            entries: entries.clone(),
            file: file.display().to_string(),
        });
        format!(
            "approved by the user and added to the allowlist: `{}`",
            entries.join("`, `")
        )
    }

    /// The state machine layer when no stage is running: it passes every
    /// call on to the mode. Recorded so each call's trail shows every layer.
    pub fn audit_no_state_machine(&self, p: &Proposal<'_>) {
        self.record(
            p,
            Audited::Pass,
            "state-machine",
            "no state machine stage is running; the mode decides",
            None,
        );
    }

    /// The mode layer inside a state machine's stage: the stage's decision
    /// stands and the mode is not asked.
    pub fn audit_mode_skipped(&self, p: &Proposal<'_>, stage_id: &str) {
        self.record(
            p,
            Audited::Pass,
            "mode",
            &format!("inside stage `{stage_id}` the state machine decides; the mode is not asked"),
            Some(self.mode),
        );
    }

    /// Record a guard's verdict: `None` allowed, `Some(reason)` denied.
    pub fn audit_guard(&self, p: &Proposal<'_>, guard: &str, denied: Option<&str>) {
        let (decision, reason) = match denied {
            None => (Audited::Approve, "the guard allowed the call"),
            Some(reason) => (Audited::Deny, reason),
        };
        self.record(p, decision, &format!("guard:{guard}"), reason, None);
    }

    fn audit(&self, p: &Proposal<'_>, d: &Decision, layer: &str, reason: &str) {
        let decision = match d {
            Decision::Approve => Audited::Approve,
            Decision::Deny(_) => Audited::Deny,
            Decision::Halt => Audited::Halt,
        };
        self.record(p, decision, layer, reason, Some(self.mode));
    }

    fn record(
        &self,
        p: &Proposal<'_>,
        decision: Audited,
        layer: &str,
        reason: &str,
        mode: Option<Mode>,
    ) {
        self.bus.record(KernelEvent::ApprovalDecided {
            call_id: p.call_id.into(),
            tool: p.tool.into(),
            key: p.key.into(),
            decision,
            layer: layer.into(),
            reason: reason.into(),
            mode: mode.map(|m| m.as_str().into()),
            stage: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASH: Callee<'static> = Callee::Tool("bash");
    const READ: Callee<'static> = Callee::Tool("read");

    fn mcp<'a>(server: &'a str, tool: &'a str) -> Callee<'a> {
        Callee::Mcp { server, tool }
    }

    #[test]
    fn stricter_mode_wins() {
        use Mode::*;
        assert_eq!(Yolo.stricter(Ask), Ask);
        assert_eq!(Ask.stricter(Yolo), Ask);
        assert_eq!(Allowlist.stricter(Yolo), Allowlist);
        assert_eq!(Yolo.stricter(Yolo), Yolo);
        assert!(Yolo.is_looser_than(Allowlist) && !Ask.is_looser_than(Allowlist));
    }

    #[test]
    fn allow_patterns() {
        let p = AllowPattern::parse("bash:git *").unwrap();
        assert!(p.matches(BASH, "git status"));
        assert!(!p.matches(BASH, "rm -rf /"));
        assert!(!p.matches(READ, "git status"));
        assert!(
            AllowPattern::parse("read")
                .unwrap()
                .matches(READ, "anything")
        );
        assert!(AllowPattern::parse(":x").is_err());
        // Only `*` is special.
        let p = AllowPattern::parse("edit:src/[a]?.rs").unwrap();
        let edit = Callee::Tool("edit");
        assert!(p.matches(edit, "src/[a]?.rs") && !p.matches(edit, "src/a1.rs"));
        let p = AllowPattern::parse("read:src/*").unwrap();
        assert!(p.matches(READ, "src/a/b.rs") && !p.matches(READ, "src"));
        assert!(!p.matches(READ, "src/a\nrm"));
        let p = AllowPattern::parse("bash:*a*b*").unwrap();
        assert!(p.matches(BASH, "xaybz") && !p.matches(BASH, "ba"));
    }

    #[test]
    fn unclassified_lines_need_an_exact_entry() {
        let line = format!("{UNCLASSIFIED}echo $HOME");
        for wildcard in ["bash", "bash:*", "bash:(unclassified) *"] {
            let p = AllowPattern::parse(wildcard).unwrap();
            assert!(!p.matches(BASH, &line), "{wildcard}");
        }
        let exact = AllowPattern::parse(&format!("bash:{line}")).unwrap();
        assert!(exact.matches(BASH, &line));
    }

    #[test]
    fn every_line_of_a_key_must_be_allowed() {
        let list = ["bash:git *", "bash:ls", "read"]
            .iter()
            .map(|t| AllowPattern::parse(t).unwrap())
            .collect();
        let a = Authority::new(Mode::Allowlist, list, Bus::new());
        assert_eq!(
            a.allowlisted(BASH, false, "git status\nls").as_deref(),
            Some("bash:git *`, `bash:ls")
        );
        assert_eq!(a.allowlisted(BASH, false, "git log\nrm -rf ~"), None);
        assert_eq!(a.allowlisted(READ, false, "").as_deref(), Some("read"));
        assert_eq!(a.allowlisted(BASH, false, ""), None);
    }

    #[test]
    fn a_tool_pattern_covers_the_tools_of_one_mcp_server_only() {
        let p = AllowPattern::parse("mcp__github__*").unwrap();
        assert!(p.matches(mcp("github", "create_issue"), "{\"title\":\"x\"}"));
        assert!(!p.matches(mcp("gitlab", "create_issue"), "{}"));
        assert!(!p.matches(BASH, "rm -rf /"));
        let exact = AllowPattern::parse("read").unwrap();
        assert!(!exact.matches(Callee::Tool("read2"), ""));
    }

    /// The attack of issue 34: a server `github__x` offering `pwn` made
    /// `mcp__github__x__pwn`, which `mcp__github__*` matched as a string.
    /// Matched as fields, the entry means server `github` only; and the
    /// name a server's tool shows may hold `__` without confusing it.
    #[test]
    fn mcp_entries_match_the_server_and_the_tool_as_separate_fields() {
        let github = AllowPattern::parse("mcp__github__*").unwrap();
        assert!(!github.matches(mcp("github__x", "pwn"), "{}"));
        assert!(!github.matches(mcp("github-x", "pwn"), "{}"));
        assert!(github.matches(mcp("github", "x__pwn"), "{}"));
        let one = AllowPattern::parse("mcp__github__x__pwn").unwrap();
        assert!(one.matches(mcp("github", "x__pwn"), "{}"));
        assert!(!one.matches(mcp("github", "x"), "{}"));
        let every = AllowPattern::parse("mcp__*__*").unwrap();
        assert!(every.matches(mcp("any", "tool"), "{}"));
        // A stud tool's entry never approves an MCP tool, and the other
        // way round, whatever the names look like.
        for stud in ["*", "m*", "mcp_*"] {
            let p = AllowPattern::parse(stud).unwrap();
            assert!(!p.matches(mcp("github", "pwn"), "{}"), "{stud}");
        }
        assert!(!github.matches(Callee::Tool("mcp__github__pwn"), "{}"));
        assert!(!every.matches(Callee::Tool("mcp__github__pwn"), "{}"));
        // An MCP entry must name both parts.
        for bad in ["mcp__github", "mcp__*", "mcp____x", "mcp__github__"] {
            let e = AllowPattern::parse(bad).unwrap_err();
            assert!(
                e.contains(&format!("`{bad}`")) && e.contains("mcp__<server>__<tool>"),
                "{e}"
            );
        }
    }

    #[test]
    fn entries_from_a_key_approve_exactly_that_key() {
        assert_eq!(
            allowlist_entries("bash", "cargo test\ngit status\ncargo test"),
            ["bash:cargo test", "bash:git status"]
        );
        // An empty key gets `tool:`, not `tool` (which approves any key).
        assert_eq!(allowlist_entries("web-fetch", ""), ["web-fetch:"]);
        let list = allowlist_entries("bash", "cargo test\ngit status")
            .iter()
            .map(|t| AllowPattern::parse(t).unwrap())
            .collect();
        let a = Authority::new(Mode::Allowlist, list, Bus::new());
        assert!(
            a.allowlisted(BASH, false, "git status\ncargo test")
                .is_some()
        );
        assert!(a.allowlisted(BASH, false, "cargo test --release").is_none());
        let empty = Authority::new(
            Mode::Allowlist,
            vec![AllowPattern::parse("web-fetch:").unwrap()],
            Bus::new(),
        );
        let fetch = Callee::Tool("web-fetch");
        assert!(empty.allowlisted(fetch, false, "").is_some());
        assert!(empty.allowlisted(fetch, false, "https://x").is_none());
    }

    #[test]
    fn the_users_own_entries_never_approve_a_tool_a_project_brought() {
        let own = AllowPattern::parse("mytool:*").unwrap();
        let any = AllowPattern::parse("other:*").unwrap().reaching(Reach::Any);
        let a = Authority::new(Mode::Allowlist, vec![own, any], Bus::new());
        let (mine, other) = (Callee::Tool("mytool"), Callee::Tool("other"));
        assert!(a.allowlisted(mine, false, "x").is_some());
        assert!(a.allowlisted(mine, true, "x").is_none());
        assert!(a.allowlisted(other, true, "x").is_some());
    }
}
