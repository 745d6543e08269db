//! Cells to the terminal with crossterm. A cell's symbol is shown as is
//! only when it holds no control character; otherwise as `?`.

use std::borrow::Cow;
use std::io::Write;

use crossterm::style::{
    Attribute, Attributes, Color, Print, SetAttributes, SetBackgroundColor, SetForegroundColor,
};
use crossterm::{cursor, queue, terminal};

use crate::runtime::domain::{Color as WitColor, Modifiers};
use crate::runtime::services::Cell;
use stud_protocol::terminal::steers;

pub fn cells<W: Write>(out: &mut W, cells: &[Cell]) -> std::io::Result<()> {
    for c in cells {
        queue!(
            out,
            cursor::MoveTo(c.x, c.y),
            SetAttributes(Attributes::from(Attribute::Reset)),
            SetForegroundColor(color(&c.fg)),
            SetBackgroundColor(color(&c.bg)),
            SetAttributes(attributes(c.modifiers)),
            Print(inert(&c.symbol))
        )?;
    }
    queue!(out, SetAttributes(Attributes::from(Attribute::Reset)))?;
    out.flush()
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

    #[test]
    fn bidi_controls_are_dropped_from_cells() {
        assert_eq!(inert("\u{202e}"), " ");
        assert_eq!(inert("a\u{202e}"), "a");
        assert_eq!(inert("\u{2066}b\u{2069}"), "b");
        assert_eq!(inert("\u{200f}"), " ");
        assert!(matches!(inert("ok"), Cow::Borrowed("ok")));
    }
}
