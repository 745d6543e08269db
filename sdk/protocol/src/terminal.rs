//! Text that reaches a person's terminal. Model output, tool output,
//! extension and folder names and error messages are data: an escape
//! sequence in them could clear the screen, retitle the window, move the
//! cursor to draw a fake prompt, or reorder what is shown (bidirectional
//! overrides). Everything a UI did not style itself goes through
//! [`safe`] first.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character that steers a terminal shown as a visible
/// escape (`\u{1b}`, `\r`, `\u{202e}`); newlines and tabs are kept, so is
/// everything printable. Borrowed when there is nothing to change.
pub fn safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(steers) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if steers(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `c` as the visible escape [`safe`] shows it: `\r`, or `\u{1b}`.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '\r' => out.push_str("\\r"),
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// Whether `c` can change what a terminal shows other than by printing
/// itself: C0 controls but newline and tab, DEL, C1 controls, and the
/// Unicode marks that reorder or hide text.
pub fn steers(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional embeddings, overrides and isolates; LRM/RLM/ALM.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        '\u{200e}' | '\u{200f}' | '\u{061c}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_visible_and_text_stays() {
        assert!(matches!(safe("plain text\n\twith tab"), Cow::Borrowed(_)));
        assert_eq!(
            safe("\u{1b}]0;pwned\u{7}title"),
            "\\u{1b}]0;pwned\\u{7}title"
        );
        assert_eq!(safe("ok\r[y/N] "), "ok\\r[y/N] ");
        assert_eq!(safe("\u{1b}[2J"), "\\u{1b}[2J");
        assert_eq!(safe("a\u{9b}31mb"), "a\\u{9b}31mb");
        assert_eq!(safe("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(safe("héllo → 世界"), "héllo → 世界");
        assert!(!safe("\u{1b}\u{7}\u{8}\u{7f}").chars().any(steers));
    }
}
