//! Checkpoints (issue 38, in progress): the project tree's state before a
//! turn's first change, kept so the turn can be undone. A snapshot lists
//! every file the project's ignore rules keep (path, mode, size, mtime,
//! content digest); contents live once each in a content-addressed store
//! under the stud home. A file whose size and mtime did not change since
//! the last snapshot is not read again (it costs a stat). Restoring writes
//! each file through a temporary file and a rename, so a crash leaves the
//! old file or the new one, never a torn one.
//!
//! Not wired into sessions yet: `/undo`, `/rewind`, the git form (an
//! unreferenced commit through a temporary index) and the CLI come next.

mod objects;
mod restore;
mod snapshot;

pub use objects::Objects;
pub use restore::{Change, plan, restore};
pub use snapshot::{Entry, Limits, Snapshot, take};
