//! Cells to the terminal with crossterm. A cell's symbol is shown as is
//! only when it holds no control character; otherwise as `?`.
//!
//! A frame goes out as one write inside a synchronized update (DEC mode
//! 2026): a terminal that knows the mode shows it whole, never half drawn
//! (a dialog's frame without its body); one that does not ignores the
//! mode, and one write still leaves it less to tear.

use std::borrow::Cow;
use std::io::Write;

use crossterm::style::{
    Attribute, Attributes, Color, Print, SetAttributes, SetBackgroundColor, SetForegroundColor,
};
use crossterm::{cursor, queue, terminal};

use crate::runtime::domain::{Color as WitColor, Modifiers};
use crate::runtime::services::Cell;
use stud_protocol::terminal::steers;

/// Cells in the order given. The cursor is moved only where a cell does
/// not follow the one before on its row, and the style is set only where
/// it changes: a full 200x60 frame is a tenth of the bytes it would be
/// with both per cell, which the terminal (and a person on a slow link)
/// parses that much faster.
/// With `clear_first`, the screen is cleared inside the same update.
pub fn cells<W: Write>(out: &mut W, clear_first: bool, cells: &[Cell]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(cells.len() * 2 + 64);
    queue!(frame, terminal::BeginSynchronizedUpdate)?;
    if clear_first {
        queue!(frame, terminal::Clear(terminal::ClearType::All))?;
    }
    frame_cells(&mut frame, cells)?;
    queue!(frame, terminal::EndSynchronizedUpdate)?;
    out.write_all(&frame)?;
    out.flush()
}

fn frame_cells(out: &mut Vec<u8>, cells: &[Cell]) -> std::io::Result<()> {
    let mut next: Option<(u16, u16)> = None;
    let mut style: Option<Style> = None;
    for c in cells {
        if next != Some((c.x, c.y)) {
            queue!(out, cursor::MoveTo(c.x, c.y))?;
        }
        let s = Style::of(c);
        if style != Some(s) {
            queue!(
                out,
                SetAttributes(Attributes::from(Attribute::Reset)),
                SetForegroundColor(color(&c.fg)),
                SetBackgroundColor(color(&c.bg)),
                SetAttributes(s.modifiers)
            )?;
            style = Some(s);
        }
        let symbol = inert(&c.symbol);
        queue!(out, Print(&symbol))?;
        // One column for a printable ASCII character; anything wider (or
        // of a width the terminal may count otherwise) moves explicitly.
        next = (symbol.len() == 1 && symbol.is_ascii()).then(|| (c.x.saturating_add(1), c.y));
    }
    queue!(out, SetAttributes(Attributes::from(Attribute::Reset)))?;
    Ok(())
}

/// A cell's colours and attributes, comparable.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Style {
    fg: (u8, u32),
    bg: (u8, u32),
    modifiers: Attributes,
}

impl Style {
    fn of(c: &Cell) -> Self {
        Style {
            fg: color_key(&c.fg),
            bg: color_key(&c.bg),
            modifiers: attributes(c.modifiers),
        }
    }
}

fn color_key(c: &WitColor) -> (u8, u32) {
    match c {
        WitColor::Reset => (0, 0),
        WitColor::Indexed(i) => (1, u32::from(*i)),
        WitColor::Rgb((r, g, b)) => (2, u32::from_be_bytes([0, *r, *g, *b])),
    }
}

pub fn cursor<W: Write>(out: &mut W, at: Option<(u16, u16)>) -> std::io::Result<()> {
    match at {
        Some((x, y)) => queue!(out, cursor::MoveTo(x, y), cursor::Show)?,
        None => queue!(out, cursor::Hide)?,
    }
    out.flush()
}

pub fn clear<W: Write>(out: &mut W) -> std::io::Result<()> {
    queue!(out, terminal::Clear(terminal::ClearType::All))?;
    out.flush()
}

/// What a cell may put on the screen: printable text only. A control
/// character makes the cell `?`; the invisible marks that reorder or hide
/// text (bidirectional overrides and isolates, LRM, RLM, ALM: what
/// [`steers`] names besides controls) are dropped from it, so model text
/// shows in the order it was written, whichever UI drew it.
pub fn inert(symbol: &str) -> Cow<'_, str> {
    if symbol.chars().any(char::is_control) {
        return Cow::Borrowed("?");
    }
    if !symbol.chars().any(steers) {
        return Cow::Borrowed(if symbol.is_empty() { " " } else { symbol });
    }
    let kept: String = symbol.chars().filter(|c| !steers(*c)).collect();
    if kept.is_empty() {
        Cow::Borrowed(" ")
    } else {
        Cow::Owned(kept)
    }
}

fn color(c: &WitColor) -> Color {
    match c {
        WitColor::Reset => Color::Reset,
        WitColor::Indexed(i) => Color::AnsiValue(*i),
        WitColor::Rgb((r, g, b)) => Color::Rgb {
            r: *r,
            g: *g,
            b: *b,
        },
    }
}

fn attributes(m: Modifiers) -> Attributes {
    let mut a = Attributes::default();
    for (flag, attr) in [
        (Modifiers::BOLD, Attribute::Bold),
        (Modifiers::DIM, Attribute::Dim),
        (Modifiers::ITALIC, Attribute::Italic),
        (Modifiers::UNDERLINED, Attribute::Underlined),
        (Modifiers::REVERSED, Attribute::Reverse),
        (Modifiers::CROSSED_OUT, Attribute::CrossedOut),
    ] {
        if m.contains(flag) {
            a.set(attr);
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(inert("a"), "a");
        assert_eq!(inert("\u{1b}"), "?");
        assert_eq!(inert("\u{1b}[2J"), "?");
        assert_eq!(inert("\u{9b}"), "?");
        assert_eq!(inert(""), " ");
        assert_eq!(inert("é"), "é");
    }

    fn cell(x: u16, y: u16, symbol: &str, fg: WitColor) -> Cell {
        Cell {
            x,
            y,
            symbol: symbol.into(),
            fg,
            bg: WitColor::Reset,
            modifiers: Modifiers::empty(),
        }
    }

    /// What a terminal shows is the same as with a move and a style per
    /// cell; only the bytes are fewer.
    #[test]
    fn runs_of_cells_share_one_move_and_one_style() {
        let row: Vec<Cell> = "hello"
            .chars()
            .enumerate()
            .map(|(i, ch)| cell(i as u16 + 2, 3, &ch.to_string(), WitColor::Indexed(2)))
            .chain([
                cell(7, 3, "界", WitColor::Indexed(2)),
                cell(9, 3, "x", WitColor::Indexed(4)),
                cell(0, 4, "y", WitColor::Indexed(4)),
            ])
            .collect();
        let mut out = Vec::new();
        cells(&mut out, false, &row).expect("paint");
        let text = String::from_utf8(out).expect("utf8");
        // Moves: to (2,3), after the wide character, and to the next row.
        assert_eq!(text.matches('H').count(), 3, "{text:?}");
        assert!(text.contains("hello界"), "{text:?}");
        assert!(
            text.starts_with("\u{1b}[?2026h") && text.ends_with("\u{1b}[?2026l"),
            "a frame is one synchronized update: {text:?}"
        );
        let mut parser = vt100::Parser::new(6, 20, 0);
        parser.process(text.as_bytes());
        let screen = parser.screen();
        assert_eq!(
            screen.contents_between(3, 0, 3, 20).trim_end(),
            "  hello界x"
        );
        assert_eq!(screen.cell(4, 0).map(|c| c.contents()), Some("y"));
        assert_eq!(screen.cell(3, 9).map(|c| c.contents()), Some("x"));
        assert_eq!(
            screen.cell(3, 9).map(|c| c.fgcolor()),
            Some(vt100::Color::Idx(4))
        );
    }

    /// A new UI's first frame clears what the last UI left, inside its
    /// own update: a terminal that knows the mode goes from the old frame
    /// to the new one, never through a blank screen.
    #[test]
    fn a_frame_that_clears_first_clears_inside_its_update() {
        let mut parser = vt100::Parser::new(3, 10, 0);
        parser.process(b"old frame");
        let mut out = Vec::new();
        cells(&mut out, true, &[cell(0, 1, "n", WitColor::Reset)]).expect("paint");
        let text = String::from_utf8(out.clone()).expect("utf8");
        assert!(
            text.starts_with("\u{1b}[?2026h\u{1b}[2J"),
            "the clear opens the update: {text:?}"
        );
        parser.process(&out);
        assert_eq!(parser.screen().contents(), "\nn");
    }

    /// A cell (model text a UI drew) that holds a synchronized-update
    /// marker cannot open an update the frame does not close (a terminal
    /// would freeze until its timeout) nor close the frame's early.
    #[test]
    fn a_cell_cannot_begin_or_end_a_synchronized_update() {
        let cells = [
            cell(0, 0, "\u{1b}[?2026h", WitColor::Reset),
            cell(1, 0, "\u{1b}[?2026l", WitColor::Reset),
        ];
        let mut out = Vec::new();
        super::cells(&mut out, false, &cells).expect("paint");
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.matches("\u{1b}[?2026h").count(), 1, "{text:?}");
        assert_eq!(text.matches("\u{1b}[?2026l").count(), 1, "{text:?}");
        assert!(text.ends_with("\u{1b}[?2026l"), "{text:?}");
    }

    #[test]
    fn bidi_controls_are_dropped_from_cells() {
        assert_eq!(inert("\u{202e}"), " ");
        assert_eq!(inert("a\u{202e}"), "a");
        assert_eq!(inert("\u{2066}b\u{2069}"), "b");
        assert_eq!(inert("\u{200f}"), " ");
        assert!(matches!(inert("ok"), Cow::Borrowed("ok")));
    }
}
