//! What the host itself says to the person's terminal, never an
//! extension (whose output passes only text and SGR styling): the bell or
//! a desktop notification (OSC 9, OSC 777) when the person is needed, and
//! the clipboard (OSC 52) on the person's `/copy`. Every sequence is built
//! here from text with its controls removed, so nothing inside can end it
//! early and smuggle in another.

use base64::Engine as _;

use crate::config::NotifyVia;

/// The host's own command: the clipboard is written by the host on the
/// person's request, never by an extension (their output cannot carry
/// the sequence).
pub const COPY: &str = "/copy";

/// The most text `/copy` sends: terminals cap OSC 52 (xterm at 100 000
/// bytes of base64, some lower).
pub const CLIPBOARD_MAX_BYTES: usize = 74_000;

/// The sequence that notifies with `text`, or none when notifications
/// are off.
pub fn notification(via: NotifyVia, text: &str) -> Option<String> {
    let text = printable(text);
    match via {
        NotifyVia::Off => None,
        NotifyVia::Bell => Some("\x07".into()),
        NotifyVia::Osc9 => Some(format!("\x1b]9;{text}\x07")),
        // `;` separates the title from the body.
        NotifyVia::Osc777 => Some(format!(
            "\x1b]777;notify;stud;{}\x07",
            text.replace(';', ",")
        )),
    }
}

/// The sequence that puts `text` on the clipboard, or why not.
pub fn clipboard(text: &str) -> Result<String, String> {
    if text.len() > CLIPBOARD_MAX_BYTES {
        return Err(format!(
            "the answer is {} bytes, more than a terminal takes at once ({CLIPBOARD_MAX_BYTES}); copy it from the session file (`stud session show`)",
            text.len()
        ));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    Ok(format!("\x1b]52;c;{encoded}\x07"))
}

fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .filter(|c| !stud_protocol::terminal::steers(*c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_inside_a_notification_can_end_it() {
        let hostile = "done\x07\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J";
        let seq = notification(NotifyVia::Osc9, hostile).expect("on");
        assert_eq!(seq.matches('\x07').count(), 1, "{seq:?}");
        assert_eq!(seq.matches('\x1b').count(), 1, "{seq:?}");
        let seq = notification(NotifyVia::Osc777, "a;b").expect("on");
        assert_eq!(seq, "\x1b]777;notify;stud;a,b\x07");
        assert_eq!(notification(NotifyVia::Bell, "x").as_deref(), Some("\x07"));
        assert_eq!(notification(NotifyVia::Off, "x"), None);
    }

    #[test]
    fn the_clipboard_gets_base64_and_a_limit() {
        assert_eq!(clipboard("hi\x1b").expect("small"), "\x1b]52;c;aGkb\x07");
        let big = "x".repeat(CLIPBOARD_MAX_BYTES + 1);
        assert!(
            clipboard(&big)
                .unwrap_err()
                .contains("more than a terminal takes")
        );
    }
}
