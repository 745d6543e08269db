//! Ctrl-G: the input goes to the person's editor, as `git commit` does.
//! The screen is handed back to the terminal while it runs (cooked mode,
//! main screen, the input thread parked so no key meant for the editor is
//! taken) and taken over again after. It is the person's own program on
//! the person's request, so it runs as they set it up, outside the sandbox.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{RawGuard, Screen};

impl Screen {
    /// `text` as the person saved it in their editor, or why not.
    pub async fn edit_text(self: Arc<Self>, text: String) -> Result<String, String> {
        tokio::task::spawn_blocking(move || self.edit_blocking(&text))
            .await
            .map_err(|e| format!("the editor could not be run: {e}"))?
    }

    fn edit_blocking(&self, text: &str) -> Result<String, String> {
        let editor = editor().ok_or("no editor: set $VISUAL or $EDITOR")?;
        let file = tempfile::Builder::new()
            .prefix("stud-input-")
            .suffix(".md")
            .tempfile()
            .map_err(|e| format!("cannot make the file to edit: {e}"))?;
        std::fs::write(file.path(), text)
            .map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
        self.park_reader();
        self.release();
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("stud-editor")
            .arg(file.path())
            .status();
        let back = RawGuard::enter();
        self.reader.asked.store(false, Ordering::Release);
        match back {
            Ok(raw) => *self.raw.lock().unwrap_or_else(|p| p.into_inner()) = Some(raw),
            Err(e) => return Err(format!("the screen could not be taken back: {e}")),
        }
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => return Err(format!("`{editor}` ended with {s}; the input is unchanged")),
            Err(e) => return Err(format!("`{editor}` could not start: {e}")),
        }
        let edited = std::fs::read_to_string(file.path())
            .map_err(|e| format!("cannot read back {}: {e}", file.path().display()))?;
        // Editors end the last line; the input box has no use for it.
        Ok(edited.strip_suffix('\n').unwrap_or(&edited).to_string())
    }

    /// Ask the input thread to stop reading and wait (briefly) until it has.
    fn park_reader(&self) {
        self.reader.asked.store(true, Ordering::Release);
        let start = Instant::now();
        while !self.reader.parked.load(Ordering::Acquire)
            && start.elapsed() < Duration::from_secs(1)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `$VISUAL`, else `$EDITOR`, else `vi` if there is one.
fn editor() -> Option<String> {
    for var in ["VISUAL", "EDITOR"] {
        if let Some(e) = std::env::var(var).ok().filter(|e| !e.trim().is_empty()) {
            return Some(e);
        }
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("vi").is_file()));
    on_path.then(|| "vi".to_string())
}
