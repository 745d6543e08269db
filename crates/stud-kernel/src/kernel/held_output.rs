//! What UIs other than the interactor write while a question is open (from
//! its request to its answer): held back until the answer is in. A UI that only
//! observes could otherwise scroll the question off the screen and print
//! a question of its own, whose answer the interactor would then read.

use std::sync::{Arc, Mutex};

/// Most bytes held; past it the rest is dropped with a note.
const MAX_HELD: usize = 64 * 1024;

/// Where held output goes once let out.
type Flush = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Clone)]
pub struct HeldOutput {
    /// `Some` while a question is open.
    held: Arc<Mutex<Option<Held>>>,
    flush: Flush,
}

#[derive(Default)]
struct Held {
    text: String,
    dropped: usize,
}

/// Holds output until dropped, then lets it out.
pub struct Holding {
    held: HeldOutput,
}

impl Drop for Holding {
    fn drop(&mut self) {
        let taken = self.held.lock().take();
        if let Some(h) = taken {
            let mut text = h.text;
            if h.dropped > 0 {
                text.push_str(&format!(
                    "\n[{} bytes another UI wrote while a question was open were dropped]\n",
                    h.dropped
                ));
            }
            if !text.is_empty() {
                (self.held.flush)(&text);
            }
        }
    }
}

impl HeldOutput {
    /// Output held later goes to `flush`.
    pub fn new(flush: impl Fn(&str) + Send + Sync + 'static) -> Self {
        HeldOutput {
            held: Arc::default(),
            flush: Arc::new(flush),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start holding; what was held goes out when the guard drops (the
    /// question was answered, or given up).
    pub fn hold(&self) -> Holding {
        *self.lock() = Some(Held::default());
        Holding { held: self.clone() }
    }

    /// Keep `text` if output is held now; `false` when it should go out.
    pub fn keep(&self, text: &str) -> bool {
        let mut held = self.lock();
        let Some(h) = held.as_mut() else {
            return false;
        };
        let room = MAX_HELD.saturating_sub(h.text.len());
        if text.len() <= room {
            h.text.push_str(text);
        } else {
            h.dropped += text.len();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_waits_for_the_answer_and_then_goes_out_in_order() {
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        let held = HeldOutput::new(move |t| sink.lock().unwrap().push_str(t));
        assert!(!held.keep("before"));
        let guard = held.hold();
        assert!(held.keep("a"));
        assert!(held.keep("b"));
        assert_eq!(*out.lock().unwrap(), "");
        drop(guard);
        assert_eq!(*out.lock().unwrap(), "ab");
        assert!(!held.keep("after"));
    }

    #[test]
    fn a_flood_is_bounded() {
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        let held = HeldOutput::new(move |t| sink.lock().unwrap().push_str(t));
        let guard = held.hold();
        let line = "x".repeat(1000);
        for _ in 0..200 {
            held.keep(&line);
        }
        drop(guard);
        let text = out.lock().unwrap().clone();
        assert!(text.len() < MAX_HELD + 200, "{}", text.len());
        assert!(
            text.contains("were dropped"),
            "{}",
            &text[text.len() - 100..]
        );
    }
}
