//! Questions as dialogs. While one is open the host delivers no input to
//! `on_input`: the dialog reads keys itself until it has an answer.
//! Approvals offer allow once, allow for this session (or, in the
//! allowlist mode, add to the allowlist, which the kernel confirms and
//! writes to the global settings) and deny; the answer's value tells the
//! kernel which (`once` is not remembered).

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use stud_sdk::host::terminal::{self, KeyCode, KeyModifiers, TermEvent};
use stud_sdk::wit::stud::extension::interaction::{
    InteractionKind, InteractionRequest, InteractionResponse, InteractionStatus,
};

use crate::Tui;
use crate::transcript::clip;

pub struct Dialog {
    title: String,
    body: String,
    /// (label, value); a `None` value rejects.
    options: Vec<(String, Option<String>)>,
    selected: usize,
    /// Free text, for `ask`.
    text: Option<String>,
    /// Letter keys that pick an option (`y`, `a`, `l`, `n` in approvals).
    letters: Vec<(char, usize)>,
}

impl Dialog {
    fn of(kind: &InteractionKind, mode: &str) -> Self {
        let opt = |l: &str, v: Option<&str>| (l.to_string(), v.map(str::to_string));
        match kind {
            InteractionKind::Approve(a) => {
                // "For this session" means nothing to the allowlist mode
                // (only the ask mode remembers approvals); there the
                // lasting choice is an allowlist entry.
                let (lasting, letter) = if mode == "allowlist" {
                    (opt("2. Add to the allowlist…", Some("allowlist")), 'l')
                } else {
                    (opt("2. Allow for this session", Some("session")), 'a')
                };
                Dialog {
                    title: format!("Allow {}?", a.tool),
                    body: if a.approval_key.is_empty() {
                        a.description.clone()
                    } else {
                        format!("{}\n{}", clip(&a.approval_key, 300), a.description)
                    },
                    options: vec![
                        opt("1. Allow once", Some("once")),
                        lasting,
                        opt("3. Deny", None),
                    ],
                    selected: 0,
                    text: None,
                    letters: vec![('y', 0), (letter, 1), ('n', 2)],
                }
            }
            InteractionKind::Confirm(prompt) => Dialog {
                title: "Confirm".into(),
                body: prompt.clone(),
                options: vec![opt("1. Yes", Some("yes")), opt("2. No", None)],
                selected: 1,
                text: None,
                letters: vec![('y', 0), ('n', 1)],
            },
            InteractionKind::Select(choice) => Dialog {
                title: "Choose".into(),
                body: choice.prompt.clone(),
                options: choice
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| (format!("{}. {o}", i + 1), Some(o.clone())))
                    .collect(),
                selected: 0,
                text: None,
                letters: Vec::new(),
            },
            InteractionKind::Ask(prompt) => Dialog {
                title: "Question".into(),
                body: prompt.clone(),
                options: Vec::new(),
                selected: 0,
                text: Some(String::new()),
                letters: Vec::new(),
            },
        }
    }

    pub fn render(&self, f: &mut Frame) {
        let area = f.area();
        let width = area.width.saturating_sub(4).min(90);
        let height = (self.options.len() as u16 + 8).min(area.height);
        let [row] = Layout::vertical([Constraint::Length(height)])
            .flex(Flex::Center)
            .areas(area);
        let [popup] = Layout::horizontal([Constraint::Length(width)])
            .flex(Flex::Center)
            .areas(row);
        let mut lines: Vec<Line> = self
            .body
            .lines()
            .map(|l| Line::from(l.to_string()))
            .collect();
        lines.push(Line::default());
        for (i, (label, _)) in self.options.iter().enumerate() {
            let style = if i == self.selected {
                Style::default().fg(Color::Black).bg(Color::Cyan)
            } else {
                Style::default()
            };
            lines.push(Line::from(Span::styled(format!(" {label} "), style)));
        }
        if let Some(t) = &self.text {
            lines.push(Line::from(vec![
                Span::styled("› ", Style::default().fg(Color::Cyan)),
                Span::raw(t.clone()),
            ]));
        }
        f.render_widget(Clear, popup);
        f.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(
                        format!(" {} ", self.title),
                        Style::default().add_modifier(Modifier::BOLD),
                    ))
                    .border_style(Style::default().fg(Color::Yellow)),
            ),
            popup,
        );
    }

    /// A key; `Some` once the dialog has its answer.
    fn key(&mut self, code: KeyCode) -> Option<(InteractionStatus, Option<String>)> {
        let choose = |d: &Dialog, i: usize| -> Option<(InteractionStatus, Option<String>)> {
            let (_, value) = d.options.get(i)?;
            Some(match value {
                Some(v) => (InteractionStatus::Accepted, Some(v.clone())),
                None => (InteractionStatus::Rejected, None),
            })
        };
        if let Some(t) = self.text.as_mut() {
            return match code {
                KeyCode::Enter => Some((InteractionStatus::Accepted, Some(t.clone()))),
                KeyCode::Esc => Some((InteractionStatus::Rejected, None)),
                KeyCode::Backspace => {
                    t.pop();
                    None
                }
                KeyCode::Char(c) => {
                    t.push(c);
                    None
                }
                _ => None,
            };
        }
        match code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.options.len().saturating_sub(1))
            }
            KeyCode::Enter => return choose(self, self.selected),
            KeyCode::Esc => return Some((InteractionStatus::Rejected, None)),
            KeyCode::Char(c) if self.letters.iter().any(|(l, _)| *l == c) => {
                let at = self.letters.iter().find(|(l, _)| *l == c).map(|(_, i)| *i);
                return at.and_then(|i| choose(self, i));
            }
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let n = c.to_digit(10).unwrap_or(0) as usize;
                if n >= 1 {
                    return choose(self, n - 1);
                }
            }
            _ => {}
        }
        None
    }
}

/// Show the question and read keys until it is answered.
pub fn ask(tui: &mut Tui, request: InteractionRequest) -> InteractionResponse {
    let mut dialog = Dialog::of(&request.kind, &tui.status.mode);
    let answer = loop {
        crate::view::draw(tui, stud_sdk::host::now_ms(), Some(&dialog));
        match terminal::read_event(100) {
            Some(TermEvent::Key(k))
                if matches!(k.code, KeyCode::Char('l'))
                    && k.modifiers.contains(KeyModifiers::CTRL) =>
            {
                if let Some(t) = tui.term.as_mut() {
                    let _ = t.clear();
                }
            }
            Some(TermEvent::Key(k)) => {
                if let Some(a) = dialog.key(k.code) {
                    break a;
                }
            }
            Some(TermEvent::Paste(text)) => {
                if let Some(t) = dialog.text.as_mut() {
                    t.push_str(&text);
                }
            }
            Some(TermEvent::Resize(s)) => {
                if let Some(t) = tui.term.as_mut() {
                    t.backend_mut().resized(s.cols, s.rows);
                    let _ = t.autoresize();
                    let _ = t.clear();
                }
            }
            Some(TermEvent::Tick) | None => {}
        }
    };
    crate::view::draw(tui, stud_sdk::host::now_ms(), None);
    InteractionResponse {
        correlation_id: request.correlation_id,
        status: answer.0,
        value: answer.1,
    }
}
