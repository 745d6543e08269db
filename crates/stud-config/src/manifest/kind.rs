//! Extension kinds and the per-kind defaults that follow from what each
//! kind does in the agent loop.

use stud_protocol::text_enum;

text_enum! {
    /// What an extension is; selects its WIT world and its defaults.
    pub enum Kind("kind") {
        Provider = "provider",
        Tool = "tool",
        Hook = "hook",
        Ui = "ui",
        Logger = "logger",
        ContextProvider = "context-provider",
        StateMachine = "state-machine",
        Command = "command",
        SessionStore = "session-store",
    }
}

text_enum! {
    /// When a changed extension may be swapped in.
    pub enum ReloadBehavior("reload behavior") {
        /// Any time, even mid-turn: the extension keeps no turn state.
        InTurn = "in-turn",
        /// Only between turns, so a turn sees one version throughout.
        BetweenTurns = "between-turns",
        /// Only on restart (e.g. it owns open session files).
        Never = "never",
    }
}

impl Kind {
    /// Hooks sit on every step and are stateless by design, so they can
    /// swap mid-turn. UIs and loggers run as bus subscribers for the whole
    /// session and session stores hold open files: those take a new
    /// version at the next start (as do state machines and commands,
    /// which a running session does not swap yet).
    pub fn default_reload(self) -> ReloadBehavior {
        match self {
            Kind::Hook => ReloadBehavior::InTurn,
            Kind::Provider | Kind::Tool | Kind::ContextProvider => ReloadBehavior::BetweenTurns,
            Kind::Logger | Kind::Ui | Kind::SessionStore | Kind::StateMachine | Kind::Command => {
                ReloadBehavior::Never
            }
        }
    }

    /// Per-call deadline: providers stream long responses, hooks and
    /// loggers sit on the hot path and must be quick.
    pub fn default_timeout_ms(self) -> u32 {
        match self {
            Kind::Provider => 300_000,
            Kind::Tool => 120_000,
            Kind::Hook | Kind::Logger => 2_000,
            Kind::Ui | Kind::SessionStore => 10_000,
            Kind::ContextProvider | Kind::StateMachine => 5_000,
            Kind::Command => 60_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        assert_eq!(Kind::ALL.len(), 9);
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap_or_default();
            assert_eq!(json, format!("\"{kind}\""));
        }
        assert_eq!(Kind::ContextProvider.as_str(), "context-provider");
    }

    #[test]
    fn unknown_kind_lists_all() {
        let err = "toolz".parse::<Kind>().err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "unknown kind \"toolz\"; write one of: provider, tool, hook, ui, logger, context-provider, state-machine, command, session-store"
            )
        );
    }
}
