//! Where a session sits in a delegation tree: its agent path (`main`,
//! `main/reviewer`), its depth, and for a child the parent it reports to.
//! A child's id is its parent's id, `_` and a suffix, so stores and
//! listings can tell children from the sessions a person started.

use std::sync::atomic::{AtomicU32, Ordering};

/// The path of a session the person started.
pub const MAIN: &str = "main";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentLink {
    pub session_id: String,
    /// The parent's `task` call this child answers.
    pub call_id: String,
    pub agent: String,
}

#[derive(Debug)]
pub struct Lineage {
    pub path: String,
    /// 1 for the main session.
    pub depth: u32,
    pub parent: Option<ParentLink>,
    children: AtomicU32,
}

impl Default for Lineage {
    fn default() -> Self {
        Lineage {
            path: MAIN.into(),
            depth: 1,
            parent: None,
            children: AtomicU32::new(0),
        }
    }
}

impl Lineage {
    /// The lineage of a child started by `parent_id`'s call `call_id`.
    pub fn child(&self, parent_id: &str, call_id: &str, agent: &str) -> Lineage {
        Lineage {
            path: format!("{}/{agent}", self.path),
            depth: self.depth + 1,
            parent: Some(ParentLink {
                session_id: parent_id.into(),
                call_id: call_id.into(),
                agent: agent.into(),
            }),
            children: AtomicU32::new(0),
        }
    }

    /// A fresh id for the next child of session `own_id`: unique across
    /// runs of a resumed parent (a random part), ordered within one.
    pub fn next_child_id(&self, own_id: &str) -> String {
        let n = self.children.fetch_add(1, Ordering::Relaxed) + 1;
        let mut salt = [0u8; 2];
        let _ = getrandom::fill(&mut salt);
        format!("{own_id}_{n}{}", hex::encode(salt))
    }
}

/// Whether `id` names a child session (kept with its parent, not offered
/// by `--continue` nor listed on its own).
pub fn is_child_id(id: &str) -> bool {
    id.contains('_')
}

/// The id of the session that started child session `id`, if it is one.
pub fn parent_id(id: &str) -> Option<&str> {
    id.rsplit_once('_').map(|(parent, _)| parent)
}

/// Whether `child` is a direct child of `parent`.
pub fn is_child_of(child: &str, parent: &str) -> bool {
    child
        .strip_prefix(parent)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|rest| !rest.contains('_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_link_children_to_parents() {
        let main = Lineage::default();
        let a = main.next_child_id("s1");
        let b = main.next_child_id("s1");
        assert_ne!(a, b);
        assert!(is_child_id(&a) && !is_child_id("s1"));
        assert!(is_child_of(&a, "s1"));
        let child = main.child("s1", "tc1", "reviewer");
        assert_eq!(child.path, "main/reviewer");
        assert_eq!(child.depth, 2);
        let grand = child.next_child_id(&a);
        assert!(is_child_of(&grand, &a));
        assert!(!is_child_of(&grand, "s1"));
    }
}
