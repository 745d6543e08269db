//! Watching extension folders (the `notify` crate, debounced) so a changed
//! component is noticed while a session runs: each scope's `extensions/`
//! and `store/` folders and its lockfile (which `stud ext install`
//! rewrites).

use std::path::PathBuf;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{Debouncer, new_debouncer};

/// How long the file system must be quiet before a change is reported
/// (editors and copies write in several steps).
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// Keeps the watch alive; dropping it stops watching.
pub struct Watch {
    _debouncer: Debouncer<RecommendedWatcher>,
}

/// Call `on_change` (on the watcher's thread) after changes under any of
/// the scope roots.
pub fn watch(
    roots: &[PathBuf],
    on_change: impl Fn() + Send + 'static,
) -> Result<Watch, notify_debouncer_mini::notify::Error> {
    let mut debouncer = new_debouncer(
        DEBOUNCE,
        move |events: notify_debouncer_mini::DebounceEventResult| {
            if events.is_ok_and(|e| !e.is_empty()) {
                on_change();
            }
        },
    )?;
    for root in roots {
        if root.is_dir() {
            debouncer
                .watcher()
                .watch(root, RecursiveMode::NonRecursive)?;
        }
        for sub in ["extensions", "store"] {
            let dir = root.join(sub);
            if dir.is_dir() {
                debouncer.watcher().watch(&dir, RecursiveMode::Recursive)?;
            }
        }
    }
    Ok(Watch {
        _debouncer: debouncer,
    })
}
