//! What a line UI may write to the terminal: text, line breaks, tabs and
//! SGR styling (`ESC [ ... m`: colours, bold, underline), nothing else.
//! Every other escape sequence is dropped whole (OSC, such as OSC 52 that
//! sets the clipboard or OSC 8 links; DCS, SOS, PM and APC strings; every
//! CSI but SGR: cursor movement, erasing, scrolling regions, mode changes;
//! two-byte escapes such as `ESC c`, a full reset), and every other
//! character that steers a terminal (`\r` that lets text be drawn over a
//! line, backspace, C1 controls, bidirectional overrides) is shown as a
//! visible escape, as [`stud_protocol::terminal::safe`] does. A UI can
//! therefore colour what it prints, but not rewrite what is on the screen,
//! fake a prompt over it, or reach the terminal's other powers.
//!
//! A sequence cut between two writes is dropped as far as it goes; its
//! rest arrives as plain text.

use std::borrow::Cow;

use stud_protocol::terminal::{push_escaped, steers};

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// C1 String Terminator, as one character.
const ST: char = '\u{9c}';

/// `text` as the terminal may receive it from a UI.
pub fn styled_only(text: &str) -> Cow<'_, str> {
    if !text.chars().any(steers) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == ESC {
            let (sequence, after) = split_escape(rest);
            if is_sgr(sequence) {
                out.push_str(sequence);
            }
            rest = after;
            continue;
        }
        if steers(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// An escape sequence at the start of `text` (which starts with ESC) and
/// what follows it. An unfinished one runs to the end of the text.
fn split_escape(text: &str) -> (&str, &str) {
    let body = &text[ESC.len_utf8()..];
    let Some(kind) = body.chars().next() else {
        return (text, "");
    };
    let end = match kind {
        // CSI: parameter bytes, intermediate bytes, one final byte.
        '[' => body[1..]
            .char_indices()
            .find(|(_, c)| !matches!(c, '\u{20}'..='\u{3f}'))
            .map(|(i, c)| {
                1 + i
                    + if ('\u{40}'..='\u{7e}').contains(&c) {
                        c.len_utf8()
                    } else {
                        0
                    }
            }),
        // Strings: OSC ends at BEL or ST; DCS, SOS, PM and APC at ST.
        ']' | 'P' | 'X' | '^' | '_' => string_end(&body[1..], kind == ']').map(|i| 1 + i),
        // Two-byte escapes (and those with intermediate bytes first).
        _ => body
            .char_indices()
            .find(|(_, c)| !matches!(c, '\u{20}'..='\u{2f}'))
            .map(|(i, c)| i + c.len_utf8()),
    };
    let cut = ESC.len_utf8() + end.unwrap_or(body.len());
    text.split_at(cut)
}

/// Where a control string ends (past its terminator), within `text`.
fn string_end(text: &str, bel_ends: bool) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            BEL if bel_ends => return Some(i + 1),
            ST => return Some(i + ST.len_utf8()),
            ESC if chars.peek().map(|(_, n)| *n) == Some('\\') => return Some(i + 2),
            _ => {}
        }
    }
    None
}

/// `ESC [ <digits ; :> m`: Select Graphic Rendition, and only that, but
/// never "conceal" (8): hidden text could carry a fake prompt the person
/// never sees but copies.
fn is_sgr(sequence: &str) -> bool {
    sequence
        .strip_prefix("\u{1b}[")
        .and_then(|s| s.strip_suffix('m'))
        .is_some_and(|params| {
            params
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';' || c == ':')
                && !conceals(params)
        })
}

/// Whether SGR parameters switch on concealed text: a top-level `8`, not
/// a colour argument of `38`/`48`/`58` (`38;5;8` is colour 8).
fn conceals(params: &str) -> bool {
    let mut items = params.split(';');
    while let Some(p) = items.next() {
        match p.split(':').next().unwrap_or_default() {
            "8" | "08" => return true,
            "38" | "48" | "58" if !p.contains(':') => match items.next() {
                Some("5") => {
                    items.next();
                }
                Some("2") => {
                    items.next();
                    items.next();
                    items.next();
                }
                _ => {}
            },
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concealed_text_is_not_styled() {
        assert_eq!(styled_only("\u{1b}[8mhidden"), "hidden");
        assert_eq!(styled_only("\u{1b}[1;8mhidden"), "hidden");
        assert_eq!(styled_only("\u{1b}[38;5;8mgrey"), "\u{1b}[38;5;8mgrey");
        assert_eq!(
            styled_only("\u{1b}[38;2;8;8;8mgrey"),
            "\u{1b}[38;2;8;8;8mgrey"
        );
    }

    #[test]
    fn styling_stays_and_everything_else_goes() {
        assert!(matches!(styled_only("plain\n\ttext"), Cow::Borrowed(_)));
        assert_eq!(
            styled_only("\u{1b}[1;31mred\u{1b}[0m \u{1b}[38;5;208mx\u{1b}[m"),
            "\u{1b}[1;31mred\u{1b}[0m \u{1b}[38;5;208mx\u{1b}[m"
        );
        // OSC 52 (clipboard) with BEL and with ST, an OSC 8 link, a title.
        assert_eq!(styled_only("a\u{1b}]52;c;cHduZWQ=\u{7}b"), "ab");
        assert_eq!(styled_only("a\u{1b}]52;c;eA==\u{1b}\\b"), "ab");
        assert_eq!(
            styled_only("\u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        // Cursor movement, erasing, modes, DCS, a full reset.
        assert_eq!(
            styled_only("\u{1b}[2J\u{1b}[H\u{1b}[5A\u{1b}[?1049h\u{1b}[2Kx"),
            "x"
        );
        assert_eq!(styled_only("\u{1b}P+q544e\u{1b}\\y"), "y");
        assert_eq!(styled_only("\u{1b}cz"), "z");
        assert_eq!(styled_only("\u{1b}(0q"), "q");
        // Not SGR although it ends in `m`: private or with intermediates.
        assert_eq!(styled_only("\u{1b}[?1m\u{1b}[1 mq"), "q");
        // Lone controls become visible; so do bidi overrides.
        assert_eq!(styled_only("ok\r[y/N] "), "ok\\r[y/N] ");
        assert_eq!(styled_only("a\u{8}b\u{9b}2J"), "a\\u{8}b\\u{9b}2J");
        assert_eq!(styled_only("x\u{202e}y"), "x\\u{202e}y");
        // An unfinished sequence is dropped to the end of this write.
        assert_eq!(styled_only("t\u{1b}]52;c;abc"), "t");
        assert_eq!(styled_only("t\u{1b}[12"), "t");
        assert_eq!(styled_only("t\u{1b}"), "t");
        // Whatever passes has no escape but SGR.
        let mixed = "\u{1b}[31m\u{1b}]0;t\u{7}\u{1b}[1;1H\u{1b}[0m";
        assert_eq!(styled_only(mixed), "\u{1b}[31m\u{1b}[0m");
    }
}
