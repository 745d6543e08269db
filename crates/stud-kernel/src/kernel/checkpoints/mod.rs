//! Checkpoints: the project tree's state before a turn's first change and
//! after the turn, kept so the turn can be undone (`/undo`) or the session
//! rewound (`/rewind`, `stud session rewind`). A snapshot lists every file
//! the project's ignore rules keep (path, mode, size, mtime, content
//! digest); contents live once each in a content-addressed store under the
//! stud home, shared by the project's sessions. A file whose size, mode
//! and mtime did not change since the last snapshot is not read again (it
//! costs a stat). Restoring writes each file through a temporary file and
//! a rename, so a crash leaves the old file or the new one, never a torn
//! one.

mod capture;
mod git_form;
mod journal;
mod keeper;
mod objects;
mod restore;
mod retention;

pub use capture::{Coverage, Entry, Limits, Snapshot, take, take_covering};
pub use git_form::GitObjects;
pub use journal::{Journal, Kind, Record, standing};
pub use keeper::{
    Carried, CheckpointError, CheckpointSettings, Checkpoints, RestorePlan, change_path, describe,
    journal_of, message_digest, project_dir,
};
pub use objects::Objects;
pub use restore::{Change, plan, restore};
pub use retention::prune;
