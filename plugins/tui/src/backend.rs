//! A ratatui backend that draws through the host: cells go to
//! `terminal::draw`, which renders them and refuses control characters.
//! The component never writes escape sequences itself.

use std::io;

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::Cell as RCell;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color as RColor, Modifier};
use stud_sdk::host::terminal::{self, Cell, Color, Modifiers};

#[derive(Default)]
pub struct HostBackend {
    pending: Vec<Cell>,
    cursor: Option<(u16, u16)>,
    size: Option<Size>,
}

impl HostBackend {
    /// Use this size instead of asking the host (after a resize event).
    pub fn resized(&mut self, cols: u16, rows: u16) {
        self.size = Some(Size::new(cols, rows));
    }
}

fn color(c: RColor) -> Color {
    match c {
        RColor::Reset => Color::Reset,
        RColor::Black => Color::Indexed(0),
        RColor::Red => Color::Indexed(1),
        RColor::Green => Color::Indexed(2),
        RColor::Yellow => Color::Indexed(3),
        RColor::Blue => Color::Indexed(4),
        RColor::Magenta => Color::Indexed(5),
        RColor::Cyan => Color::Indexed(6),
        RColor::Gray => Color::Indexed(7),
        RColor::DarkGray => Color::Indexed(8),
        RColor::LightRed => Color::Indexed(9),
        RColor::LightGreen => Color::Indexed(10),
        RColor::LightYellow => Color::Indexed(11),
        RColor::LightBlue => Color::Indexed(12),
        RColor::LightMagenta => Color::Indexed(13),
        RColor::LightCyan => Color::Indexed(14),
        RColor::White => Color::Indexed(15),
        RColor::Indexed(i) => Color::Indexed(i),
        RColor::Rgb(r, g, b) => Color::Rgb((r, g, b)),
    }
}

fn modifiers(m: Modifier) -> Modifiers {
    let mut out = Modifiers::empty();
    for (a, b) in [
        (Modifier::BOLD, Modifiers::BOLD),
        (Modifier::DIM, Modifiers::DIM),
        (Modifier::ITALIC, Modifiers::ITALIC),
        (Modifier::UNDERLINED, Modifiers::UNDERLINED),
        (Modifier::REVERSED, Modifiers::REVERSED),
        (Modifier::CROSSED_OUT, Modifiers::CROSSED_OUT),
    ] {
        if m.contains(a) {
            out |= b;
        }
    }
    out
}

impl Backend for HostBackend {
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a RCell)>,
    {
        for (x, y, c) in content {
            self.pending.push(Cell {
                x,
                y,
                symbol: c.symbol().to_string(),
                fg: color(c.fg),
                bg: color(c.bg),
                modifiers: modifiers(c.modifier),
            });
        }
        Ok(())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.cursor = None;
        terminal::set_cursor(None);
        Ok(())
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        terminal::set_cursor(self.cursor);
        Ok(())
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        let (x, y) = self.cursor.unwrap_or((0, 0));
        Ok(Position { x, y })
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let p = position.into();
        self.cursor = Some((p.x, p.y));
        terminal::set_cursor(self.cursor);
        Ok(())
    }

    fn clear(&mut self) -> io::Result<()> {
        terminal::clear();
        Ok(())
    }

    fn clear_region(&mut self, _clear_type: ClearType) -> io::Result<()> {
        terminal::clear();
        Ok(())
    }

    fn size(&self) -> io::Result<Size> {
        Ok(self.size.unwrap_or_else(|| {
            let s = terminal::size();
            Size::new(s.cols, s.rows)
        }))
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        Ok(WindowSize {
            columns_rows: self.size()?,
            pixels: Size::default(),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            terminal::draw(&self.pending);
            self.pending.clear();
        }
        Ok(())
    }
}
