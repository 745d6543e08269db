//! What the session said so far, as entries rendered to lines: prompts,
//! the assistant's Markdown, tool calls as compact blocks with their
//! result summary (and a coloured diff for edits), notices.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::markdown;

/// Most characters of a streaming answer re-rendered per frame; the rest
/// is already off screen.
const STREAM_TAIL: usize = 8000;
const MAX_DIFF_LINES: usize = 40;

pub enum Entry {
    User(String),
    Assistant(String),
    Tool {
        call_id: String,
        name: String,
        args: String,
        diff: Vec<Line<'static>>,
        state: ToolState,
    },
    Notice(String, Color),
}

/// Where a tool call stands, as the person should read it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolState {
    /// Proposed; the authority stack is deciding.
    Proposed,
    /// A question about it is open: nothing runs until it is answered.
    AwaitingApproval,
    /// Running since this time (ms); the elapsed time shows after a second.
    Running {
        since_ms: u64,
    },
    Done(String),
    Failed(String),
    Denied(String),
    Cancelled(String),
}

impl ToolState {
    fn line(&self, now_ms: u64) -> (String, Color) {
        match self {
            ToolState::Proposed => ("proposed".into(), Color::DarkGray),
            ToolState::AwaitingApproval => ("waiting for your approval".into(), Color::Yellow),
            ToolState::Running { since_ms } => {
                let secs = now_ms.saturating_sub(*since_ms) / 1000;
                let text = if secs >= 1 {
                    format!("running… {secs}s")
                } else {
                    "running…".into()
                };
                (text, Color::DarkGray)
            }
            ToolState::Done(summary) => (summary.clone(), Color::DarkGray),
            ToolState::Failed(why) => (why.clone(), Color::Red),
            ToolState::Denied(why) => (format!("denied: {why}"), Color::Red),
            ToolState::Cancelled(why) => (format!("cancelled: {why}"), Color::Yellow),
        }
    }

    /// Whether it can still change.
    pub fn open(&self) -> bool {
        matches!(
            self,
            ToolState::Proposed | ToolState::AwaitingApproval | ToolState::Running { .. }
        )
    }
}

impl Entry {
    pub fn tool(call_id: &str, name: &str, arguments: &Value) -> Self {
        let args = arguments.to_string();
        let diff = match name {
            "edit" => diff_lines(
                arguments
                    .get("old_string")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                arguments
                    .get("new_string")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
            "multi-edit" => arguments
                .get("edits")
                .and_then(Value::as_array)
                .map(|edits| {
                    edits
                        .iter()
                        .flat_map(|e| {
                            diff_lines(
                                e.get("old_string").and_then(Value::as_str).unwrap_or(""),
                                e.get("new_string").and_then(Value::as_str).unwrap_or(""),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
            "write" => diff_lines(
                "",
                arguments
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
            _ => Vec::new(),
        };
        Entry::Tool {
            call_id: call_id.to_string(),
            name: name.to_string(),
            args,
            diff,
            state: ToolState::Proposed,
        }
    }

    /// The entry as lines for a transcript `width` cells wide;
    /// `streaming` renders only the tail.
    pub fn lines(&self, streaming: bool, now_ms: u64, width: usize) -> Vec<Line<'static>> {
        match self {
            Entry::User(t) => t
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    Line::from(vec![
                        Span::styled(
                            if i == 0 { "› " } else { "  " },
                            Style::default()
                                .fg(Color::Cyan)
                                .add_modifier(Modifier::BOLD),
                        ),
                        Span::styled(l.to_string(), Style::default().add_modifier(Modifier::BOLD)),
                    ])
                })
                .collect(),
            Entry::Assistant(t) => {
                let text = if streaming && t.len() > STREAM_TAIL {
                    let mut at = t.len() - STREAM_TAIL;
                    while !t.is_char_boundary(at) {
                        at += 1;
                    }
                    match t[at..].find('\n') {
                        Some(nl) => &t[at + nl + 1..],
                        None => &t[at..],
                    }
                } else {
                    t.as_str()
                };
                markdown::render(text)
            }
            Entry::Tool {
                name,
                args,
                diff,
                state,
                ..
            } => {
                let mut out = vec![Line::from(vec![
                    Span::styled("⏺ ", Style::default().fg(Color::Green)),
                    Span::styled(name.clone(), Style::default().add_modifier(Modifier::BOLD)),
                    Span::styled(
                        format!("({})", clip(args, 100)),
                        Style::default().fg(Color::DarkGray),
                    ),
                ])];
                out.extend(diff.iter().cloned());
                let (text, color) = state.line(now_ms);
                out.push(Line::from(Span::styled(
                    format!("  ⎿ {text}"),
                    Style::default().fg(color),
                )));
                out
            }
            Entry::Notice(t, c) => t
                .lines()
                .flat_map(|l| hang_wrap(l, width))
                .map(|l| Line::from(Span::styled(l, Style::default().fg(*c))))
                .collect(),
        }
    }
}

/// A one-line summary of a tool's output.
pub fn summary(output: &str) -> String {
    let lines = output.lines().count();
    let first = output.lines().next().unwrap_or("");
    if lines > 1 {
        format!("{} (+{} lines)", clip(first, 100), lines - 1)
    } else {
        clip(first, 100)
    }
}

pub fn clip(text: &str, max: usize) -> String {
    let one = text.replace('\n', " ");
    if one.chars().count() <= max {
        one
    } else {
        let cut: String = one.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn diff_lines(old: &str, new: &str) -> Vec<Line<'static>> {
    let diff = TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for change in diff.iter_all_changes() {
        let (sign, color) = match change.tag() {
            ChangeTag::Delete => ("-", Color::Red),
            ChangeTag::Insert => ("+", Color::Green),
            ChangeTag::Equal => continue,
        };
        if out.len() == MAX_DIFF_LINES {
            out.push(Line::from(Span::styled(
                "    …",
                Style::default().fg(Color::DarkGray),
            )));
            break;
        }
        let text = change.value().trim_end_matches('\n').to_string();
        out.push(Line::from(Span::styled(
            format!("    {sign} {text}"),
            Style::default().fg(color),
        )));
    }
    out
}

/// `line` wrapped to `width` cells, its continuation lines indented under
/// where its text starts: under the description of a `name  description`
/// row (a gap of two or more spaces after a label, as `/help` and `/tools`
/// print), else under the line's own indentation.
pub fn hang_wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let body = line.trim_start();
    let lead = line.len() - body.len();
    let hang = hang_column(line).min(width / 2);
    let first = " ".repeat(lead.min(width / 2));
    let rest = " ".repeat(hang);
    let options = textwrap::Options::new(width)
        .initial_indent(&first)
        .subsequent_indent(&rest)
        .break_words(true);
    let wrapped: Vec<String> = textwrap::wrap(body, options)
        .into_iter()
        .map(|l| l.into_owned())
        .collect();
    if wrapped.is_empty() {
        vec![String::new()]
    } else {
        wrapped
    }
}

/// The column a wrapped `line` continues at.
fn hang_column(line: &str) -> usize {
    let body = line.trim_start();
    let lead = line.len() - body.len();
    match body.find("  ") {
        Some(gap) => {
            let after = &body[gap..];
            let text = after.trim_start();
            if text.is_empty() {
                lead
            } else {
                let label = &line[..lead + gap + (after.len() - text.len())];
                textwrap::core::display_width(label)
            }
        }
        None => lead,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_row_hangs_under_its_description() {
        let row = "  /provider [PROVIDER]  Show the provider in use and the loaded ones, or switch";
        let lines = hang_wrap(row, 50);
        assert_eq!(lines[0], "  /provider [PROVIDER]  Show the provider in use");
        assert!(
            lines[1..].iter().all(|l| l.starts_with(&" ".repeat(24))),
            "{lines:?}"
        );
        assert!(
            lines.iter().all(|l| textwrap::core::display_width(l) <= 50),
            "{lines:?}"
        );
    }

    #[test]
    fn prose_wraps_under_its_indent_and_short_lines_stay() {
        assert_eq!(hang_wrap("short", 40), vec!["short"]);
        assert_eq!(hang_wrap("", 40), vec![""]);
        let lines = hang_wrap("    indented prose that goes on and on", 20);
        assert!(lines.iter().all(|l| l.starts_with("    ")), "{lines:?}");
    }
}
