//! The terminal a full-screen UI draws on. The host owns it: raw mode,
//! the alternate screen and bracketed paste are switched on here and
//! always switched off again (drop, panic). UIs only send cells and read
//! events; every cell is rendered here with control characters replaced
//! and bidirectional controls dropped, so no text a UI draws can move the
//! cursor, rewrite the screen or reorder what is shown. A line UI's text
//! passes [`styled_only`].

mod editor;
mod keys;
mod paint;
mod raw;

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::runtime::services::{Cell, ScreenSize, TermEvent};
pub use crate::runtime::styled_text::styled_only;
pub use keys::convert;
pub use raw::RawGuard;

pub struct Screen {
    out: Mutex<Out>,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<TermEvent>>,
    raw: Mutex<Option<RawGuard>>,
    reader: std::sync::Arc<ReaderPause>,
}

/// Where frames go, and whether the next one starts on a cleared screen.
struct Out {
    to: Box<dyn Write + Send>,
    /// A new UI took the screen ([`Screen::clear_with_next_frame`]):
    /// its first frame clears what the last one left, in the same update.
    clear_first: bool,
}

/// Stops the input thread reading while another program (the person's
/// editor) has the terminal, so no key meant for it is taken.
#[derive(Default)]
struct ReaderPause {
    asked: AtomicBool,
    parked: AtomicBool,
}

/// How long the input thread waits for a key before it looks whether it
/// is asked to pause; a key that comes is read at once.
const POLL: Duration = Duration::from_millis(25);

/// The screen of this process, once a full-screen UI took it; kept across
/// sessions of one run (`/clear`, `/resume`).
pub type ScreenSlot = std::sync::Arc<Mutex<Option<std::sync::Arc<Screen>>>>;

impl Screen {
    /// Take over the process's terminal: raw mode, alternate screen,
    /// bracketed paste, and a thread reading its events.
    pub fn take_over() -> std::io::Result<Self> {
        let raw = RawGuard::enter()?;
        // crossterm opens its event source, and with it the SIGWINCH
        // handler, at the first poll. Done here, before the UI asks the
        // size and draws, so a resize between that first frame and the
        // input thread's first turn is an event, not lost (the screen
        // stayed at the old size until the next key).
        let _ = crossterm::event::poll(Duration::ZERO);
        let (tx, rx) = mpsc::unbounded_channel();
        let reader = std::sync::Arc::new(ReaderPause::default());
        let pause = reader.clone();
        std::thread::Builder::new()
            .name("stud-terminal-input".into())
            .spawn(move || {
                loop {
                    if pause.asked.load(Ordering::Acquire) {
                        pause.parked.store(true, Ordering::Release);
                        std::thread::sleep(POLL);
                        continue;
                    }
                    pause.parked.store(false, Ordering::Release);
                    match crossterm::event::poll(POLL) {
                        Ok(false) => continue,
                        Ok(true) => {}
                        Err(_) => return,
                    }
                    let Ok(ev) = crossterm::event::read() else {
                        return;
                    };
                    if let Some(ev) = convert(ev)
                        && tx.send(ev).is_err()
                    {
                        return;
                    }
                }
            })?;
        Ok(Screen {
            out: Mutex::new(Out {
                to: Box::new(std::io::stdout()),
                clear_first: false,
            }),
            events: tokio::sync::Mutex::new(rx),
            raw: Mutex::new(Some(raw)),
            reader,
        })
    }

    /// The slot's screen, taking the terminal over the first time.
    pub fn in_slot(slot: &ScreenSlot) -> std::io::Result<std::sync::Arc<Screen>> {
        let mut held = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = held.as_ref() {
            return Ok(s.clone());
        }
        let s = std::sync::Arc::new(Screen::take_over()?);
        *held = Some(s.clone());
        Ok(s)
    }

    /// Give the terminal back (cooked mode, main screen); idempotent.
    pub fn release(&self) {
        drop(self.raw.lock().unwrap_or_else(|p| p.into_inner()).take());
    }

    pub fn size(&self) -> ScreenSize {
        let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
        ScreenSize { cols, rows }
    }

    fn out(&self) -> std::sync::MutexGuard<'_, Out> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn draw(&self, cells: &[Cell]) {
        let mut out = self.out();
        let clear = std::mem::take(&mut out.clear_first);
        let _ = paint::cells(&mut out.to, clear, cells);
    }

    pub fn cursor(&self, at: Option<(u16, u16)>) {
        let _ = paint::cursor(&mut self.out().to, at);
    }

    /// A host-built sequence (notification, clipboard) between frames.
    pub fn signal(&self, sequence: &str) {
        let mut out = self.out();
        let _ = out.to.write_all(sequence.as_bytes());
        let _ = out.to.flush();
    }

    pub fn clear(&self) {
        let mut out = self.out();
        out.clear_first = false;
        let _ = paint::clear(&mut out.to);
    }

    /// A UI starts believing the screen blank, while the last session's
    /// UI left its frame there (`/clear`, `/resume`). Cleared now, the
    /// screen would stay blank for as long as the new UI takes to start;
    /// cleared in its first frame's update, the old frame gives way to
    /// the new one at once. [`Screen::clear_if_pending`] after the start
    /// covers a UI that drew nothing.
    pub fn clear_with_next_frame(&self) {
        self.out().clear_first = true;
    }

    /// Clear now if no frame has done it since [`Screen::clear_with_next_frame`].
    pub fn clear_if_pending(&self) {
        let mut out = self.out();
        if std::mem::take(&mut out.clear_first) {
            let _ = paint::clear(&mut out.to);
        }
    }

    /// An event that is already waiting, if any (never blocks: the
    /// reader is busy only while a question reads keys itself).
    pub fn try_next_event(&self) -> Option<TermEvent> {
        self.events.try_lock().ok()?.try_recv().ok()
    }

    /// The next event, waiting at most `timeout`.
    pub async fn next_event(&self, timeout: Duration) -> Option<TermEvent> {
        let mut rx = self.events.lock().await;
        tokio::time::timeout(timeout, rx.recv())
            .await
            .ok()
            .flatten()
    }
}
