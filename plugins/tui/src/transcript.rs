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
        name: String,
        args: String,
        diff: Vec<Line<'static>>,
        result: Option<(bool, String)>,
    },
    Notice(String, Color),
}

impl Entry {
    pub fn tool(name: &str, arguments: &Value) -> Self {
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
            name: name.to_string(),
            args,
            diff,
            result: None,
        }
    }

    /// The entry as lines; `streaming` renders only the tail.
    pub fn lines(&self, streaming: bool) -> Vec<Line<'static>> {
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
                result,
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
                match result {
                    None => out.push(Line::from(Span::styled(
                        "  ⎿ running…",
                        Style::default().fg(Color::DarkGray),
                    ))),
                    Some((ok, summary)) => out.push(Line::from(Span::styled(
                        format!("  ⎿ {summary}"),
                        Style::default().fg(if *ok { Color::DarkGray } else { Color::Red }),
                    ))),
                }
                out
            }
            Entry::Notice(t, c) => t
                .lines()
                .map(|l| Line::from(Span::styled(l.to_string(), Style::default().fg(*c))))
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
