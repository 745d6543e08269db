//! One frame: the transcript (its visible tail), the activity line
//! (spinner, elapsed time, tokens, queued follow-ups), command completion,
//! the input box and the status line; a dialog on top when one is open.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::Tui;
use crate::dialog::Dialog;
use stud_sdk::events::CommandInfo;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn draw(tui: &mut Tui, now_ms: u64, dialog: Option<&Dialog>) {
    let Some(mut term) = tui.term.take() else {
        return;
    };
    let _ = term.draw(|f| frame(f, tui, now_ms, dialog));
    tui.term = Some(term);
}

fn frame(f: &mut Frame, tui: &Tui, now_ms: u64, dialog: Option<&Dialog>) {
    let completions = tui.completions();
    let choices = path_choices(&tui.path_choices);
    let listed = if choices.is_empty() {
        completions.len()
    } else {
        choices.len()
    };
    let input_rows = (tui.input.lines().len() as u16).clamp(1, 6) + 2;
    let [body, activity, complete, input, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(listed as u16),
        Constraint::Length(input_rows),
        Constraint::Length(1),
    ])
    .areas(f.area());
    transcript(f, tui, body);
    f.render_widget(Paragraph::new(activity_line(tui, now_ms)), activity);
    let items: Vec<Line> = if !choices.is_empty() {
        choices
    } else {
        command_lines(&completions)
    };
    f.render_widget(Paragraph::new(items), complete);
    let mut editor = tui.input.clone();
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(if tui.running.is_some() {
            Color::DarkGray
        } else {
            Color::Cyan
        }));
    if let Some(search) = &tui.search {
        block = block.title(search.title());
    }
    editor.set_block(block);
    f.render_widget(&editor, input);
    f.render_widget(Paragraph::new(status_line(tui)), status);
    if let Some(d) = dialog {
        d.render(f);
    }
}

/// What an `@` completion left to choose from: six, and how many more.
fn path_choices(paths: &[String]) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = paths
        .iter()
        .take(6)
        .map(|p| {
            Line::from(Span::styled(
                format!("  @{p}"),
                Style::default().fg(Color::Cyan),
            ))
        })
        .collect();
    if paths.len() > 6 {
        lines.push(Line::from(Span::styled(
            format!("  … {} more (type more of the name)", paths.len() - 6),
            Style::default().fg(Color::DarkGray),
        )));
    }
    lines
}

fn command_lines(completions: &[&CommandInfo]) -> Vec<Line<'static>> {
    completions
        .iter()
        .map(|c| {
            Line::from(vec![
                Span::styled(
                    format!(
                        "  {} {}",
                        c.name,
                        c.argument_hint.clone().unwrap_or_default()
                    ),
                    Style::default().fg(Color::Cyan),
                ),
                Span::styled(
                    format!("  {}", c.description),
                    Style::default().fg(Color::DarkGray),
                ),
            ])
        })
        .collect()
}

/// The transcript's last lines, wrapped to the width and scrolled.
fn transcript(f: &mut Frame, tui: &Tui, area: Rect) {
    let width = area.width.max(1) as usize;
    let want = area.height as usize + tui.scroll as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut height = 0usize;
    let last = tui.entries.len().saturating_sub(1);
    for (i, entry) in tui.entries.iter().enumerate().rev() {
        let mut block = entry.lines(tui.streaming && i == last, tui.now_ms, width);
        block.push(Line::default());
        height += block
            .iter()
            .map(|l| l.width().max(1).div_ceil(width))
            .sum::<usize>();
        block.append(&mut lines);
        lines = block;
        if height >= want {
            break;
        }
    }
    let skip = height.saturating_sub(want);
    let p = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((u16::try_from(skip).unwrap_or(u16::MAX), 0));
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}

fn activity_line(tui: &Tui, now_ms: u64) -> Line<'static> {
    let mut spans = Vec::new();
    if tui.asking {
        // The turn waits for the person: no spinner, no clock.
        spans.push(Span::styled(
            "? waiting for your answer",
            Style::default().fg(Color::Yellow),
        ));
    } else if let Some(r) = &tui.running {
        let elapsed = now_ms.saturating_sub(r.started_ms);
        let frame = SPINNER[(elapsed / 100) as usize % SPINNER.len()];
        spans.push(Span::styled(
            format!(
                "{frame} working {}.{}s · ~{} tokens · Esc stops · Enter queues · Ctrl-S steers",
                elapsed / 1000,
                (elapsed % 1000) / 100,
                r.tokens()
            ),
            Style::default().fg(Color::Yellow),
        ));
    } else if tui.esc_armed {
        spans.push(Span::styled(
            "Esc again to rewind to an earlier turn",
            Style::default().fg(Color::DarkGray),
        ));
    }
    if !tui.queued.is_empty() {
        spans.push(Span::styled(
            format!("  {} queued", tui.queued.len()),
            Style::default().fg(Color::Magenta),
        ));
    }
    Line::from(spans)
}

fn status_line(tui: &Tui) -> Line<'static> {
    let s = &tui.status;
    let context = match s.context_window {
        Some(w) if w > 0 => format!(
            "ctx {}%",
            (s.input_tokens as f64 * 100.0 / w as f64).round()
        ),
        _ => format!("ctx {} tok", s.input_tokens),
    };
    let cost = s
        .cost_usd
        .map(|c| format!("${c:.4}"))
        .unwrap_or_else(|| "$-".into());
    let short_id: String = s.session_id.chars().take(14).collect();
    Line::from(vec![
        Span::styled(
            format!(" {}/{} ", s.provider, s.model),
            Style::default().fg(Color::Black).bg(Color::Cyan),
        ),
        Span::styled(
            format!(" {} ", s.mode),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!("│ {context} │ {cost} │ {short_id} │ /help")),
    ])
}
