//! Markdown to styled lines: headings, emphasis, inline code, lists,
//! quotes and fenced code blocks, whose lines get a light highlighting of
//! comments, strings and common keywords. The text is the model's: it is
//! only ever drawn as cell symbols, never written as terminal bytes.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

const KEYWORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "pub",
    "struct",
    "enum",
    "impl",
    "trait",
    "use",
    "mod",
    "match",
    "if",
    "else",
    "for",
    "while",
    "loop",
    "return",
    "def",
    "class",
    "import",
    "from",
    "function",
    "const",
    "var",
    "async",
    "await",
    "true",
    "false",
    "None",
    "null",
    "self",
    "Self",
    "in",
    "export",
    "package",
    "func",
    "type",
    "interface",
    "echo",
    "then",
    "fi",
    "do",
    "done",
];

pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut style = Style::default();
    let mut stack: Vec<Style> = Vec::new();
    let mut code: Option<String> = None;
    let mut list_depth = 0usize;
    let flush = |line: &mut Vec<Span<'static>>, out: &mut Vec<Line<'static>>| {
        out.push(Line::from(std::mem::take(line)));
    };
    for ev in Parser::new(text) {
        match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                if !line.is_empty() {
                    flush(&mut line, &mut out);
                }
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                out.push(Line::from(Span::styled(
                    format!("─── {lang}"),
                    Style::default().fg(Color::DarkGray),
                )));
                code = Some(String::new());
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(src) = code.take() {
                    for l in src.lines() {
                        out.push(highlight(l));
                    }
                }
                out.push(Line::from(Span::styled(
                    "───",
                    Style::default().fg(Color::DarkGray),
                )));
            }
            Event::Text(t) if code.is_some() => {
                if let Some(c) = code.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::Start(tag) => {
                stack.push(style);
                match tag {
                    Tag::Heading { level, .. } => {
                        if !line.is_empty() {
                            flush(&mut line, &mut out);
                        }
                        style = style.add_modifier(Modifier::BOLD).fg(match level {
                            HeadingLevel::H1 | HeadingLevel::H2 => Color::Cyan,
                            _ => Color::Reset,
                        });
                    }
                    Tag::Emphasis => style = style.add_modifier(Modifier::ITALIC),
                    Tag::Strong => style = style.add_modifier(Modifier::BOLD),
                    Tag::Strikethrough => style = style.add_modifier(Modifier::CROSSED_OUT),
                    Tag::BlockQuote(_) => {
                        style = style.fg(Color::DarkGray);
                        line.push(Span::styled("│ ", style));
                    }
                    Tag::List(_) => list_depth += 1,
                    Tag::Item => {
                        if !line.is_empty() {
                            flush(&mut line, &mut out);
                        }
                        line.push(Span::raw(format!(
                            "{}• ",
                            "  ".repeat(list_depth.saturating_sub(1))
                        )));
                    }
                    Tag::Link { .. } => style = style.add_modifier(Modifier::UNDERLINED),
                    _ => {}
                }
            }
            Event::End(end) => {
                style = stack.pop().unwrap_or_default();
                match end {
                    TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item => {
                        if !line.is_empty() {
                            flush(&mut line, &mut out);
                        }
                        if matches!(end, TagEnd::Paragraph | TagEnd::Heading(_)) && list_depth == 0
                        {
                            out.push(Line::default());
                        }
                    }
                    TagEnd::List(_) => list_depth = list_depth.saturating_sub(1),
                    _ => {}
                }
            }
            Event::Text(t) => line.push(Span::styled(t.to_string(), style)),
            Event::Code(t) => line.push(Span::styled(
                t.to_string(),
                Style::default().fg(Color::Yellow),
            )),
            Event::SoftBreak | Event::HardBreak => flush(&mut line, &mut out),
            Event::Rule => out.push(Line::from("────────")),
            _ => {}
        }
    }
    if let Some(src) = code.take() {
        // A block still streaming (its fence not closed yet).
        for l in src.lines() {
            out.push(highlight(l));
        }
    }
    if !line.is_empty() {
        out.push(Line::from(line));
    }
    while out.last().is_some_and(|l| l.spans.is_empty()) {
        out.pop();
    }
    out
}

/// One code line: comments grey, strings green, keywords magenta.
pub fn highlight(src: &str) -> Line<'static> {
    let base = Style::default().fg(Color::LightBlue);
    let trimmed = src.trim_start();
    if trimmed.starts_with("//") || trimmed.starts_with('#') || trimmed.starts_with("--") {
        return Line::from(Span::styled(
            src.to_string(),
            Style::default().fg(Color::DarkGray),
        ));
    }
    let mut spans = Vec::new();
    let mut word = String::new();
    let mut chars = src.chars().peekable();
    let push_word = |word: &mut String, spans: &mut Vec<Span<'static>>| {
        if word.is_empty() {
            return;
        }
        let style = if KEYWORDS.contains(&word.as_str()) {
            Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD)
        } else {
            base
        };
        spans.push(Span::styled(std::mem::take(word), style));
    };
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            push_word(&mut word, &mut spans);
            let mut s = String::from(c);
            for d in chars.by_ref() {
                s.push(d);
                if d == c {
                    break;
                }
            }
            spans.push(Span::styled(s, Style::default().fg(Color::Green)));
        } else if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            push_word(&mut word, &mut spans);
            spans.push(Span::styled(c.to_string(), base));
        }
    }
    push_word(&mut word, &mut spans);
    Line::from(spans)
}
