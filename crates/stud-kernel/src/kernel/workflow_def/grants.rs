//! Grant tokens: a state machine's `approve` for a tool outside a stage's
//! envelope, bound to one proposal and usable once, dead after the stage's
//! Exit. Never persisted.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::Value;

use crate::digest::Sha256Digest;
use crate::kernel::json_order::sorted;

/// What a grant is bound to: one proposal of one call in one attempt of
/// one stage execution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GrantTuple {
    pub execution_id: String,
    pub attempt: u32,
    pub proposal_id: String,
    pub tool: String,
    /// SHA-256 hex of the arguments as canonical JSON (keys sorted).
    pub args_digest: String,
}

/// An issued grant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GrantToken(String);

impl GrantToken {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("the grant for this call was already used; a grant approves one call once")]
    AlreadyConsumed,
    #[error("the stage execution that issued this grant has ended; its grants died with it")]
    StageExpired,
    #[error("no grant was issued for this call")]
    NotFound,
}

impl GrantError {
    pub fn code(&self) -> &'static str {
        match self {
            GrantError::AlreadyConsumed => "grant-already-consumed",
            GrantError::StageExpired => "grant-stage-expired",
            GrantError::NotFound => "grant-not-found",
        }
    }
}

#[derive(Default)]
struct Table {
    /// token -> (tuple, consumed)
    tokens: HashMap<GrantToken, (GrantTuple, bool)>,
    by_tuple: HashMap<GrantTuple, GrantToken>,
    expired: HashSet<String>,
}

/// The grants of one workflow run.
#[derive(Default)]
pub struct Grants {
    table: Mutex<Table>,
}

impl Grants {
    /// Issue the token for `tuple`. A tuple gets one token, ever: asking
    /// again after it was used is `AlreadyConsumed`.
    pub fn issue(&self, tuple: GrantTuple) -> Result<GrantToken, GrantError> {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if t.expired.contains(&tuple.execution_id) {
            return Err(GrantError::StageExpired);
        }
        if let Some(token) = t.by_tuple.get(&tuple) {
            return match t.tokens.get(token) {
                Some((_, false)) => Ok(token.clone()),
                _ => Err(GrantError::AlreadyConsumed),
            };
        }
        let mut nonce = [0u8; 16];
        // Without entropy the token is still unique (the tuple is in it).
        let _ = getrandom::fill(&mut nonce);
        let token = GrantToken(format!(
            "grant-{}-{}",
            Sha256Digest::of(format!("{tuple:?}").as_bytes()).short(),
            hex::encode(nonce)
        ));
        t.tokens.insert(token.clone(), (tuple.clone(), false));
        t.by_tuple.insert(tuple, token.clone());
        Ok(token)
    }

    /// Use `token` for the call `tuple` describes.
    pub fn consume(&self, token: &GrantToken, tuple: &GrantTuple) -> Result<(), GrantError> {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let expired = t.expired.contains(&tuple.execution_id);
        match t.tokens.get_mut(token) {
            Some((bound, _)) if bound != tuple => Err(GrantError::NotFound),
            Some(_) if expired => Err(GrantError::StageExpired),
            Some((_, true)) => Err(GrantError::AlreadyConsumed),
            Some((_, used)) => {
                *used = true;
                Ok(())
            }
            None => Err(GrantError::NotFound),
        }
    }

    /// The stage execution reached Exit: its grants are dead.
    pub fn expire(&self, execution_id: &str) {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        t.expired.insert(execution_id.to_string());
    }
}

/// SHA-256 hex of `value` as canonical JSON: object keys sorted at every
/// depth, no whitespace.
pub fn args_digest(value: &Value) -> String {
    Sha256Digest::of(sorted(value.clone()).to_string().as_bytes()).hex()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tuple(proposal: &str) -> GrantTuple {
        GrantTuple {
            execution_id: "x1".into(),
            attempt: 1,
            proposal_id: proposal.into(),
            tool: "bash".into(),
            args_digest: args_digest(&json!({"command": "ls"})),
        }
    }

    #[test]
    fn a_token_works_once_for_its_own_call() {
        let g = Grants::default();
        let t = g.issue(tuple("p1")).unwrap();
        assert_eq!(g.consume(&t, &tuple("p2")), Err(GrantError::NotFound));
        assert_eq!(g.consume(&t, &tuple("p1")), Ok(()));
        assert_eq!(
            g.consume(&t, &tuple("p1")),
            Err(GrantError::AlreadyConsumed)
        );
        assert_eq!(g.issue(tuple("p1")), Err(GrantError::AlreadyConsumed));
        let forged = GrantToken("grant-forged".into());
        assert_eq!(g.consume(&forged, &tuple("p3")), Err(GrantError::NotFound));
    }

    #[test]
    fn grants_die_at_exit() {
        let g = Grants::default();
        let t = g.issue(tuple("p1")).unwrap();
        g.expire("x1");
        assert_eq!(g.consume(&t, &tuple("p1")), Err(GrantError::StageExpired));
        assert_eq!(g.issue(tuple("p9")), Err(GrantError::StageExpired));
    }

    #[test]
    fn the_digest_ignores_key_order() {
        let a = args_digest(&json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": "s"}}));
        let b = args_digest(&json!({"a": {"x": "s", "y": [1, {"c": 3, "d": 2}]}, "b": 1}));
        assert_eq!(a, b);
        assert_ne!(a, args_digest(&json!({"b": 2})));
    }
}
