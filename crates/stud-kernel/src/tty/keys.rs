//! crossterm's events as the contract's `term-event`.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::runtime::domain::{Key, KeyCode as K, KeyModifiers as M};
use crate::runtime::services::{ScreenSize, TermEvent};

pub fn convert(ev: Event) -> Option<TermEvent> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => key(k).map(TermEvent::Key),
        Event::Paste(text) => Some(TermEvent::Paste(text)),
        Event::Resize(cols, rows) => Some(TermEvent::Resize(ScreenSize { cols, rows })),
        _ => None,
    }
}

fn key(k: KeyEvent) -> Option<Key> {
    let code = match k.code {
        KeyCode::Char(c) => K::Char(c),
        KeyCode::Enter => K::Enter,
        KeyCode::Tab => K::Tab,
        KeyCode::BackTab => K::BackTab,
        KeyCode::Backspace => K::Backspace,
        KeyCode::Delete => K::Delete,
        KeyCode::Esc => K::Esc,
        KeyCode::Left => K::Left,
        KeyCode::Right => K::Right,
        KeyCode::Up => K::Up,
        KeyCode::Down => K::Down,
        KeyCode::Home => K::Home,
        KeyCode::End => K::End,
        KeyCode::PageUp => K::PageUp,
        KeyCode::PageDown => K::PageDown,
        KeyCode::Insert => K::Insert,
        KeyCode::F(n) => K::F(n),
        _ => return None,
    };
    let mut modifiers = M::empty();
    if k.modifiers.contains(KeyModifiers::SHIFT) {
        modifiers |= M::SHIFT;
    }
    if k.modifiers.contains(KeyModifiers::CONTROL) {
        modifiers |= M::CTRL;
    }
    if k.modifiers.contains(KeyModifiers::ALT) {
        modifiers |= M::ALT;
    }
    Some(Key { code, modifiers })
}
