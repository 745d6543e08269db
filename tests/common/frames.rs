//! A terminal emulator that honours synchronized updates (DEC mode 2026)
//! the way terminals that know the mode do: what it shows changes only
//! outside an update, so a test never reads a frame half drawn. `vt100`
//! parses the bytes; this holds back what it shows until the update ends.

const BEGIN: &[u8] = b"\x1b[?2026h";
const END: &[u8] = b"\x1b[?2026l";

pub struct Frames {
    parser: vt100::Parser,
    /// The screen as of the last byte outside a synchronized update.
    shown: vt100::Screen,
    updating: bool,
    /// The end of the last read when it may be the start of a marker.
    carry: Vec<u8>,
}

impl Frames {
    pub fn new(rows: u16, cols: u16) -> Self {
        let parser = vt100::Parser::new(rows, cols, 0);
        let shown = parser.screen().clone();
        Frames {
            parser,
            shown,
            updating: false,
            carry: Vec::new(),
        }
    }

    pub fn process(&mut self, bytes: &[u8]) {
        let mut data = std::mem::take(&mut self.carry);
        data.extend_from_slice(bytes);
        let mut from = 0;
        let mut i = 0;
        while i < data.len() {
            let rest = &data[i..];
            let marker = if rest.starts_with(BEGIN) {
                Some(true)
            } else if rest.starts_with(END) {
                Some(false)
            } else {
                None
            };
            match marker {
                Some(begins) => {
                    self.parser.process(&data[from..i]);
                    if !self.updating {
                        self.shown = self.parser.screen().clone();
                    }
                    self.parser.process(&data[i..i + BEGIN.len()]);
                    i += BEGIN.len();
                    from = i;
                    self.updating = begins;
                    if !begins {
                        self.shown = self.parser.screen().clone();
                    }
                }
                None if BEGIN.starts_with(rest) || END.starts_with(rest) => break,
                None => i += 1,
            }
        }
        self.parser.process(&data[from..i]);
        self.carry = data[i..].to_vec();
        if !self.updating {
            self.shown = self.parser.screen().clone();
        }
    }

    /// What the terminal shows.
    pub fn screen(&self) -> &vt100::Screen {
        &self.shown
    }

    /// The emulator's state as parsed so far, mid-update or not: for the
    /// terminal's modes (alternate screen, cursor), which a program that is
    /// ending sets outside any frame.
    pub fn parsed(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    pub fn set_size(&mut self, rows: u16, cols: u16) {
        self.parser.screen_mut().set_size(rows, cols);
        if !self.updating {
            self.shown = self.parser.screen().clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_shows_only_once_its_update_ends_however_it_is_split() {
        let stream = b"a\x1b[?2026hbc\x1b[?2026ld";
        for split in 0..=stream.len() {
            let mut f = Frames::new(2, 10);
            f.process(&stream[..split]);
            let partial = f.screen().contents();
            assert!(
                partial.is_empty() || partial == "a" || partial == "abc" || partial == "abcd",
                "split at {split}: {partial:?}"
            );
            f.process(&stream[split..]);
            assert_eq!(f.screen().contents(), "abcd", "split at {split}");
        }
        let mut f = Frames::new(2, 10);
        f.process(b"a\x1b[?2026hb");
        assert_eq!(f.screen().contents(), "a");
        f.process(b"c\x1b[?20");
        assert_eq!(f.screen().contents(), "a");
        f.process(b"26l");
        assert_eq!(f.screen().contents(), "abc");
    }
}
